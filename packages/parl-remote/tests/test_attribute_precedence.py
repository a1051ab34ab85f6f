"""PARL's (and Python's) rule: an instance attribute named like a method of the class is what a read returns,
whether the object set it in ``__init__`` or the caller set it through the proxy (issue #14)."""

from __future__ import annotations

import parl_remote as xparl


@xparl.remote_class
class Shadowing:
    def __init__(self):
        self.scale = 3  # hides the method scale() below, as in plain Python

    def scale(self):
        return "the method"

    def offset(self):
        return "the method"

    def total(self):
        return self.scale * 2


def test_an_attribute_set_in_init_hides_the_method(connected):
    obj = Shadowing()
    local = Shadowing._original()
    assert obj.scale == local.scale == 3
    assert obj.total() == local.total() == 6
    assert obj.offset() == "the method"  # other methods stay methods


def test_an_attribute_set_through_the_proxy_hides_the_method(connected):
    obj = Shadowing()
    assert obj.offset() == "the method"
    obj.offset = 10
    assert obj.offset == 10
    obj.offset = 11
    assert obj.offset == 11
    other = Shadowing()  # another proxy of the same class is not affected
    assert other.offset() == "the method"
    assert isinstance(obj, Shadowing) and type(obj).__name__ == "Shadowing"
