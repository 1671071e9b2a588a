use super::*;

#[test]
fn a_router_script_parses() {
    let s = parse(
        "# a router\nin0 :: PortInc(port=\"eth0\")\nout1 :: PortOut(port=\"eth1\", burst=32)\n\n\
         rt :: IPLookup(routes=[\"198.18.1.0/24 0\", \"0.0.0.0/0 1\"])\nin0 -> TTL() -> rt\n\
         rt:0 -> IPChecksum() -> out1   # to eth1\nrt:1 -> 0:drop :: Sink()\n\
         tc fast(policy=rate_limit, resource=\"packet\", limit=100k)\nworker w0(cpu=1)\n",
    )
    .unwrap();
    let names: Vec<&str> = s.modules.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["in0", "out1", "rt", "TTL_1", "IPChecksum_1", "drop"]);
    assert_eq!(
        s.modules[2].args[0].value,
        Value::List(vec![Value::Str("198.18.1.0/24 0".into()), Value::Str("0.0.0.0/0 1".into())])
    );
    let links: Vec<(&str, u32, &str, u32, usize)> =
        s.links.iter().map(|l| (l.from.as_str(), l.ogate, l.to.as_str(), l.igate, l.line)).collect();
    assert_eq!(
        links,
        [
            ("in0", 0, "TTL_1", 0, 6),
            ("TTL_1", 0, "rt", 0, 6),
            ("rt", 0, "IPChecksum_1", 0, 7),
            ("IPChecksum_1", 0, "out1", 0, 7),
            ("rt", 1, "drop", 0, 8),
        ]
    );
    assert_eq!(s.classes[0].args[2], Arg { key: Some("limit".into()), value: Value::Int(100_000) });
    assert_eq!(s.workers[0].args[0], Arg { key: Some("cpu".into()), value: Value::Int(1) });
}

#[test]
fn errors_name_line_and_column() {
    let cases = [
        ("a :: Source()\nb -> a", "line 2:1: no module 'b' (declare it first: b :: Class(...))"),
        ("a :: Source()\na :: Sink()", "line 2:1: module 'a' is declared twice"),
        ("a :: source()", "line 1:6: 'source' is not a module class (classes start with a capital letter)"),
        ("a :: Source(n=1, n=2)", "line 1:18: argument 'n' given twice"),
        ("a :: Source(n=\"x)", "line 1:15: unterminated string"),
        ("a :: Source() -> 9000:Sink()", "line 1:18: a gate is 0 to 8191"),
        ("0:a :: Source()", "line 1:1: an input gate ('N:') only after '->'"),
        ("a :: Source() $", "line 1:15: unexpected character '$'"),
        ("a :: Source() b", "line 1:15: unexpected text after the statement"),
        ("a :: Source(x=[1,2)", "line 1:19: expected ',' or ']'"),
        ("\n\ntc (x=1)", "line 3:4: expected the tc's name"),
        ("a :: Source(rate=12q)", "line 1:18: '12q' is not a number"),
        ("a :: Source()\na:1", "line 2:4: an output gate (':N') only before '->'"),
    ];
    for (text, want) in cases {
        let e = parse(text).unwrap_err();
        assert_eq!(e.to_string(), want, "for {text:?}");
    }
}

#[test]
fn a_chain_may_end_at_a_named_input_gate() {
    let s = parse("a :: Source()\nb :: L2Forward()\na -> 1:b").unwrap();
    assert_eq!((s.links[0].to.as_str(), s.links[0].igate), ("b", 1));
}

#[test]
fn unnamed_modules_get_names_of_their_class() {
    let ok = parse("s :: Source()\ns -> Bypass() -> Bypass() -> Sink()").unwrap();
    let names: Vec<&str> = ok.modules.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["s", "Bypass_1", "Bypass_2", "Sink_1"]);
    // A generated name is a name like any other...
    let e = parse("s :: Source()\ns -> Bypass() -> Sink()\nBypass_1 :: Sink()").unwrap_err();
    assert_eq!(e.to_string(), "line 3:1: module 'Bypass_1' is declared twice");
    // ...and one already taken is not generated.
    let ok = parse("Bypass_1 :: Source()\nBypass_1 -> Bypass() -> Sink()").unwrap();
    assert_eq!(ok.modules[1].name, "Bypass_2");
}

#[test]
fn values_of_every_kind() {
    let s = parse("a :: X(1, -2, 3.5, \"q\\\"t\", on, [1, [2, 3]], big=2M, under=1_000, h=0x8100)").unwrap();
    let v: Vec<&Value> = s.modules[0].args.iter().map(|a| &a.value).collect();
    assert_eq!(
        v,
        [
            &Value::Int(1),
            &Value::Int(-2),
            &Value::Float(3.5),
            &Value::Str("q\"t".into()),
            &Value::Ident("on".into()),
            &Value::List(vec![Value::Int(1), Value::List(vec![Value::Int(2), Value::Int(3)])]),
            &Value::Int(2_000_000),
            &Value::Int(1000),
            &Value::Int(0x8100),
        ]
    );
}
