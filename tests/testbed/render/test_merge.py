from testbed.render.merge import deep_merge


def test_dicts_merge_recursively_and_lists_are_replaced() -> None:
    base = {"amf": {"sbi": {"server": [{"address": "10.0.0.1"}], "client": {"nrf": [{"uri": "http://a"}]}},
                    "ngap": {"server": [{"address": "10.0.2.5"}]}}}
    extra = {"amf": {"sbi": {"server": [{"address": "amf.localdomain", "scheme": "https"}]},
                     "default": {"tls": {"server": {"scheme": "https"}}}}}
    out = deep_merge(base, extra)
    assert out["amf"]["sbi"]["server"] == [{"address": "amf.localdomain", "scheme": "https"}]
    assert out["amf"]["sbi"]["client"] == {"nrf": [{"uri": "http://a"}]}
    assert out["amf"]["ngap"] == {"server": [{"address": "10.0.2.5"}]}
    assert out["amf"]["default"]["tls"]["server"]["scheme"] == "https"
    assert base["amf"]["sbi"]["server"] == [{"address": "10.0.0.1"}], "input must not be modified"
