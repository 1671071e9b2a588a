#!/bin/sh
# Regenerates the test CA, the server certificate (valid for 100 years) and the self-signed RSA
# certificate tlsfuzzer's scripts need (they offer RSA signature schemes only).
set -e
cd "$(dirname "$0")"
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -x509 -new -key ca.key -sha256 -days 36500 -subj "/CN=sirocco test CA" -out ca.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out server.key
openssl req -new -key server.key -subj "/CN=sirocco.test" -out server.csr
printf '%s\n' "subjectAltName=DNS:sirocco.test,DNS:localhost,IP:127.0.0.1,IP:198.18.0.1,IP:198.18.0.2,IP:198.18.0.10,IP:198.18.0.20" \
  "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" > ext.cnf
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 36500 -sha256 \
  -extfile ext.cnf -out server.pem
rm -f server.csr ext.cnf ca.srl
openssl genrsa 2048 | openssl pkcs8 -topk8 -nocrypt -out server-rsa.key
openssl req -x509 -new -key server-rsa.key -sha256 -days 36500 -subj "/CN=sirocco.test" \
  -addext "subjectAltName=DNS:sirocco.test,DNS:localhost" -addext "keyUsage=critical,digitalSignature,keyEncipherment" \
  -addext "extendedKeyUsage=serverAuth" -out server-rsa.pem
