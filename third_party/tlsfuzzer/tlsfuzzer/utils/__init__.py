"""Various convenience functions, unrelated to TLS or crypto"""
