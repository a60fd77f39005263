#!/usr/bin/env python3
"""Writes tests/sampler/json_schema_cases.json: JSON schemas with candidate instance texts, and regular
expressions with candidate strings, each with the verdict of the reference implementations.

The verdicts come from Python's jsonschema (the validator for the schema's draft, 2020-12 by
default, with format assertions on for the formats glia asserts: date, time, date-time, uuid) and
from Python's re.fullmatch, never from glia. json_schema_gbnf_test.cpp and regex_gbnf_test.cpp then
check that the grammars glia makes accept exactly the valid texts.

A text is "canonical" when it is written the way the grammar documents (json_schema.h): the
instance serialised by json.dumps(ensure_ascii=False, separators=(", ", ": ")) with object members in
the schema's property order, or a hand-written spelling the grammar promises to take. For canonical
texts the grammar must agree with the oracle both ways. Other texts carry a note saying why the
grammar may reject them although they are valid (member order, whitespace, a policy such as "no
extra properties when additionalProperties is absent"): for them only "accepted => valid" is
checked. A regex candidate marked "subset" is one the documented ASCII readings of \\d \\w \\s \\D \\W and
`.` may reject (Python's are Unicode-wide).

Run:  python3 tests/sampler/gen_json_schema_cases.py   (rewrites json_schema_cases.json)
Needs jsonschema with its date-time/time checkers (the rfc3339-validator module): Debian 12's
python3-jsonschema lacks them, and the script refuses to run rather than write unchecked verdicts.
"""
import importlib.metadata
import json
import os
import random
import re
import sys

import jsonschema
from jsonschema import FormatChecker
from jsonschema.validators import validator_for

ASSERTED_FORMATS = ["date", "time", "date-time", "uuid"]


def format_checker(validator_class):
    # The draft's own checkers (FormatChecker() alone mixes drafts: its "time" is draft 3's), limited
    # to the asserted formats: glia ignores the others, as 2020-12 does by default.
    checker = FormatChecker(formats=())
    own = validator_class.FORMAT_CHECKER.checkers
    checker.checkers = {name: own[name] for name in ASSERTED_FORMATS if name in own}
    return checker


_missing = [f for f in ASSERTED_FORMATS if f not in jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers]
if _missing:
    sys.exit(f"jsonschema {importlib.metadata.version('jsonschema')} cannot check formats {_missing} "
             "(install rfc3339-validator); refusing to write unchecked verdicts")


def canonical(value):
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def reject_constant(name):
    raise ValueError(f"not JSON: {name}")


def is_valid(schema, text):
    try:
        instance = json.loads(text, parse_constant=reject_constant)
    except ValueError:
        return False
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=format_checker(cls)).is_valid(instance)


# Helpers for instance lists. A plain Python value is serialised canonically. T(text) is a raw text,
# canonical unless a note says why the grammar may reject it; V(value, note) is a value whose
# canonical text is nevertheless outside what the grammar promises.
class T:
    def __init__(self, text, note=None):
        self.text, self.note = text, note


class V:
    def __init__(self, value, note):
        self.value, self.note = value, note


NOTE_ORDER = "members not in the schema's property order"
NOTE_EXTRA = "extra property while additionalProperties is absent (generated objects carry only listed ones)"
NOTE_WS = "whitespace the grammar does not allow (before the value, or more than its bounded forms)"
NOTE_TUPLE = "items after prefixItems while items is absent (none generated)"
NOTE_NUMBER = ("number spelling outside the grammar (exponent or -0 in a bounded number, 1.0 for an integer, >20 digits, "
               ">15 digits on an open integer side, a 3-digit exponent)")
NOTE_ESCAPE = "escape spelling where the grammar takes one spelling per character (pattern, keys, enum)"
NOTE_SURROGATE = "lone surrogate escape (never generated)"
NOTE_DOLLAR = "Python's $ also matches before a final newline; the grammar reads $ as ECMAScript does (the end)"
NOTE_FORMAT = "format spelling outside the generated subset (lower-case t/z, leap second, >9 fraction digits)"

SCHEMAS = []


def case(name, schema, instances):
    SCHEMAS.append((name, schema, instances))


# ---- OpenAI-style function parameters ----
case("get_weather", {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City and country, e.g. Paris, France"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["location"],
    "additionalProperties": False,
}, [
    {"location": "Paris"}, {"location": "Paris", "unit": "celsius"}, {"location": "", "unit": "fahrenheit"},
    {"unit": "celsius"}, {"location": "Paris", "unit": "kelvin"}, {"location": 5}, {"location": "P", "extra": 1},
    {}, [], "Paris", None, 3,
    T('{"location": "Paris"}\n'), T('{"location":"Paris","unit":"celsius"}'),
    T('{\n  "location": "Paris",\n  "unit": "celsius"\n}'),
    T('{"unit": "celsius", "location": "Paris"}', NOTE_ORDER),
    T(' {"location": "Paris"}', NOTE_WS), T('{"location": "Paris"}   ', NOTE_WS),
    T('{"location": "Paris"'), T('{"location": "Par\nis"}'), T('{"location": "Paris",}'),
    T('{"location": \'Paris\'}'), T('{location: "Paris"}'), T('{"location": "Paris"}}'),
    T('{"location": "\\u0050aris"}'), T('{"location": "Pa\\"ris\\\\"}'), T('{"location": "\\ud83d\\ude00"}'),
    T('{"location": "\\ud83d"}', NOTE_SURROGATE), T('{"location": "\\x41"}'), T('{"location": "a\tb"}'),
])

case("optional_first_middle_last", {
    "type": "object",
    "properties": {
        "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}, "d": {"type": "null"},
    },
    "required": ["b"],
    "additionalProperties": False,
}, [
    {"b": "x"}, {"a": 1, "b": "x"}, {"b": "x", "c": True}, {"b": "x", "d": None}, {"a": 1, "b": "x", "c": False},
    {"a": 1, "b": "x", "d": None}, {"b": "x", "c": True, "d": None}, {"a": 1, "b": "x", "c": True, "d": None},
    {}, {"a": 1}, {"a": 1, "c": True, "d": None}, {"b": 1}, {"a": "1", "b": "x"}, {"b": "x", "e": 1},
    T('{"a": 1, , "b": "x"}'), T('{, "b": "x"}'), T('{"b": "x",, "c": true}'), T('{"b": "x", }'),
    T('{"a": 1 "b": "x"}'), T('{"b": "x", "a": 1}', NOTE_ORDER),
])

case("all_optional", {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
    "additionalProperties": False,
}, [
    {}, {"a": 1}, {"b": 2}, {"c": 3}, {"a": 1, "b": 2}, {"a": 1, "c": 3}, {"b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3},
    {"d": 4}, {"a": 1, "d": 4}, {"a": "1"}, T("{,}"), T('{"a": 1,}'), T('{, "a": 1}'), T("{ }"), T("{\n}"),
    T('{"c": 3, "a": 1}', NOTE_ORDER),
])

case("additional_properties_absent", {
    "type": "object",
    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
    "required": ["x"],
}, [
    {"x": 1}, {"x": 1.5, "y": -2}, {"y": 1}, {"x": "1"},
    V({"x": 1, "z": 3}, NOTE_EXTRA), V({"x": 1, "y": 2, "z": "w"}, NOTE_EXTRA),
])

case("additional_properties_schema", {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "additionalProperties": {"type": "integer"},
}, [
    {}, {"name": "a"}, {"name": "a", "k": 1}, {"name": "a", "k": 1, "m": -2}, {"k": 1}, {"k": 1, "n": 2},
    {"name": "a", "k": "s"}, {"k": "s"}, {"name": 1}, {"name": "a", "nam": 3}, {"name": "a", "names": 3},
    {"name": "a", "": 3}, {"name": "a", "na\"me": 3},
    T('{"name": "a", "name": 3}'),  # the later member wins: name = 3, invalid
    T('{"name": "a", "\\u006eame": 3}'),  # an escaped spelling of "name": also invalid
    T('{"k": 1, "name": "a"}', NOTE_ORDER),
])

case("additional_properties_true", {
    "type": "object",
    "properties": {"a": {"type": "integer"}},
    "required": ["a"],
    "additionalProperties": True,
}, [
    {"a": 1}, {"a": 1, "b": [1, {"c": None}]}, {"a": 1, "b": "x", "c": {"d": []}}, {"b": 1}, {"a": "x"},
    T('{"a": 1, "a": "x"}'),
])

case("additional_properties_integer_excludes_listed", {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "idx": {"type": "integer"}},
    "required": ["id"],
    "additionalProperties": {"type": "string"},
}, [
    {"id": 1}, {"id": 1, "idx": 2}, {"id": 1, "i": "s"}, {"id": 1, "idxx": "s"}, {"id": 1, "id2": "s"},
    {"id": 1, "idx": "s"}, {"id": 1, "other": 2}, T('{"id": 1, "id": "s"}'), T('{"id": 1, "idx": 2, "idx": "s"}'),
])

case("object_any", {"type": "object"}, [
    {}, {"a": 1}, {"a": {"b": [1, 2, {"c": "d"}]}, "e": None}, [], "x", 1, None,
    T('{"a": 1, "a": 2}'), T('{"\\u0000": true}'),
])

case("nested_person", {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "address": {
            "type": "object",
            "properties": {
                "street": {"type": "string"},
                "city": {"type": "string"},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
            },
            "required": ["street", "city"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "address"],
    "additionalProperties": False,
}, [
    {"name": "Ann", "address": {"street": "Main 1", "city": "X"}},
    {"name": "Ann", "age": 30, "address": {"street": "Main 1", "city": "X", "zip": "12345"}},
    {"name": "Ann", "age": 151, "address": {"street": "Main 1", "city": "X"}},
    {"name": "Ann", "age": -1, "address": {"street": "Main 1", "city": "X"}},
    {"name": "", "address": {"street": "Main 1", "city": "X"}},
    {"name": "Ann", "address": {"street": "Main 1"}},
    {"name": "Ann", "address": {"street": "Main 1", "city": "X", "zip": "1234"}},
    {"name": "Ann", "address": {"street": "Main 1", "city": "X", "zip": "123456"}},
    {"name": "Ann", "address": {"street": "Main 1", "city": "X", "zip": "1234a"}},
    {"name": "Ann", "address": {"street": "Main 1", "city": "X", "country": "Y"}},
    {"name": "Ann", "age": 150, "address": {"street": "", "city": ""}},
    {"name": "Ann", "age": 0, "address": {"street": "s", "city": "c", "zip": "00000"}},
    T('{"name": "Ann", "age": 30.0, "address": {"street": "s", "city": "c"}}', NOTE_NUMBER),
    T('{"name": "Ann", "age": 030, "address": {"street": "s", "city": "c"}}'),
    T('{"name": "Ann", "age": +30, "address": {"street": "s", "city": "c"}}'),
])

case("array_of_objects", {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
        "required": ["id"],
        "additionalProperties": False,
    },
    "minItems": 1,
    "maxItems": 3,
}, [
    [{"id": 1}], [{"id": 1}, {"id": 2, "name": "b"}], [{"id": 1}, {"id": 2}, {"id": 3}],
    [], [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}], [{"name": "a"}], [{"id": "1"}], {"id": 1}, [None],
    T('[{"id": 1},]'), T('[,{"id": 1}]'), T('[{"id": 1} {"id": 2}]'), T('[\n  {"id": 1},\n  {"id": 2}\n]'),
])

case("array_min_max_integers", {
    "type": "array", "items": {"type": "integer", "minimum": -5, "maximum": 5}, "minItems": 2, "maxItems": 4,
}, [[0, 0], [-5, 5, 1], [1, 2, 3, 4], [1], [1, 2, 3, 4, 5], [6, 0], [0, -6], [], [1, 2.5], T("[1,2]"), T("[ 1 , 2 ]")])

case("array_of_arrays", {
    "type": "array",
    "items": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "maxItems": 2},
    "maxItems": 2,
}, [[], [[]], [[1, 2], [3]], [[1, 2, 3]], [[1], [2], [3]], [[10]], [[-1]], [1], [[None]]])

case("enum_mixed", {"enum": ["red", 1, None, True, {"a": 1}, [1, "x"], 2.5, "with \"quote\"\n"]}, [
    "red", 1, None, True, {"a": 1}, [1, "x"], 2.5, "with \"quote\"\n", "blue", 2, False, {"a": 2}, [1], "Red",
    T("1.0", NOTE_NUMBER), T('{"a":1}'), T('[1,"x"]'), T('"re\\u0064"', NOTE_ESCAPE), T("2.50", NOTE_NUMBER),
])

case("enum_typed", {"type": "string", "enum": ["a", "b", 3, None]}, ["a", "b", 3, None, "c"])

case("const_object", {"const": {"k": [1, 2], "s": "v"}}, [
    {"k": [1, 2], "s": "v"}, {"k": [1, 2]}, {"k": [2, 1], "s": "v"}, T('{"s": "v", "k": [1, 2]}', NOTE_ORDER),
])

case("const_string", {"type": "string", "const": "fixed"}, ["fixed", "Fixed", "fixe", "fixedd", 1])

case("any_of_string_integer", {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]}, [
    "", "ab", "abc", 10, 9, 1000, None, 10.5, [],
])

case("one_of_discriminated", {
    "oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
         "required": ["kind", "r"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
         "required": ["kind", "side"], "additionalProperties": False},
    ],
}, [
    {"kind": "circle", "r": 1}, {"kind": "square", "side": 2.5}, {"kind": "circle", "side": 1},
    {"kind": "triangle", "r": 1}, {"kind": "circle"}, {"r": 1},
])

case("any_of_with_siblings", {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
    "additionalProperties": False,
}, [{"a": 1}, {"b": 2}, {"a": 1, "b": 2}, {}, {"a": "x"}, {"c": 1}])

case("linked_list", {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"value": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
            "required": ["value", "next"],
            "additionalProperties": False,
        }
    },
    "$ref": "#/$defs/node",
}, [
    {"value": 1, "next": None}, {"value": 1, "next": {"value": 2, "next": {"value": 3, "next": None}}},
    {"value": 1}, {"value": 1, "next": {"value": "2", "next": None}}, {"value": 1, "next": 5}, None,
])

case("tree", {
    "$ref": "#/$defs/tree",
    "$defs": {
        "tree": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
            "required": ["name"],
            "additionalProperties": False,
        }
    },
}, [
    {"name": "r"}, {"name": "r", "children": []}, {"name": "r", "children": [{"name": "a"}, {"name": "b", "children": [{"name": "c"}]}]},
    {"name": "r", "children": [{}]}, {"children": []}, {"name": "r", "children": [{"name": 1}]},
])

case("recursive_root", {
    "type": "object",
    "properties": {"label": {"type": "string"}, "sub": {"$ref": "#"}},
    "required": ["label"],
    "additionalProperties": False,
}, [{"label": "a"}, {"label": "a", "sub": {"label": "b", "sub": {"label": "c"}}}, {"label": "a", "sub": {}}, {"sub": {"label": "b"}}])

case("definitions_pointer_escapes", {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "definitions": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}, "e f": {"type": "boolean"}},
    "type": "object",
    "properties": {"x": {"$ref": "#/definitions/a~1b"}, "y": {"$ref": "#/definitions/c~0d"}, "z": {"$ref": "#/definitions/e%20f"}},
    "required": ["x", "y", "z"],
    "additionalProperties": False,
}, [{"x": 1, "y": "s", "z": True}, {"x": "1", "y": "s", "z": True}, {"x": 1, "y": 2, "z": True}, {"x": 1, "y": "s", "z": 0}])

# ---- integers ----
case("integer_0_100", {"type": "integer", "minimum": 0, "maximum": 100}, [
    0, 1, 9, 10, 11, 50, 99, 100, 101, -1, 1000, 0.5,
    T("-0", NOTE_NUMBER), T("00"), T("01"), T("100.0", NOTE_NUMBER), T("1e2", NOTE_NUMBER), T("+1"),
])
case("integer_negative_range", {"type": "integer", "minimum": -50, "maximum": -10},
     [-50, -49, -11, -10, -9, -51, 0, 10, -100, -5, T("- 10")])
case("integer_exclusive", {"type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 10}, [5, 6, 9, 10, 7, 4, 11])
case("integer_float_bounds", {"type": "integer", "minimum": 1.5, "maximum": 10.5}, [1, 2, 10, 11, 5])
case("integer_int64", {"type": "integer", "minimum": -9223372036854775808, "maximum": 9223372036854775807}, [
    -9223372036854775808, -9223372036854775807, 9223372036854775807, 9223372036854775806,
    9223372036854775808, -9223372036854775809, 0, 12345678901234567, 10000000000000000000, -10000000000000000000,
])
case("integer_uint64", {"type": "integer", "minimum": 0, "maximum": 18446744073709551615}, [
    0, 18446744073709551615, 18446744073709551614, 18446744073709551616, 99999999999999999999, -1, 9999999999999999999,
])
case("integer_large_bounds", {"type": "integer", "minimum": -1000000000000, "maximum": 999999999999}, [
    -1000000000000, -999999999999, -1000000000001, 999999999999, 1000000000000, 123456789, -1,
])
case("integer_minimum_only", {"type": "integer", "minimum": 7}, [7, 8, 6, 100000, 999999999999999, -7,
                                                                V(1000000000000000, NOTE_NUMBER), V(99999999999999999999, NOTE_NUMBER),
                                                                V(100000000000000000000, NOTE_NUMBER)])
case("integer_maximum_only", {"type": "integer", "exclusiveMaximum": -3}, [-4, -3, -2, -99999, 0, 5])
case("integer_unbounded", {"type": "integer"}, [0, -1, 1, 123, -456, 999999999999999, -999999999999999, 1.5, "1", None,
                                                 V(9007199254740993, NOTE_NUMBER), V(63333333333333333333, NOTE_NUMBER),
                                                 V(123456789012345678901, NOTE_NUMBER), T("1.0", NOTE_NUMBER), T("-0")])
case("integer_multiple_of_one", {"type": "number", "multipleOf": 1, "minimum": 0}, [0, 1, 5, -1, 1.5, T("2.0", NOTE_NUMBER)])

# ---- numbers ----
case("number_unbounded", {"type": "number"}, [
    0, -1, 1.5, -0.25, 1e99, 1e-7, 123456.789, "1", None, V(1e100, NOTE_NUMBER), T("1e999", NOTE_NUMBER),
    T("1E+2"), T("1e5"), T("-0.0"), T("0.5e-3"), T("01"), T("+1"), T(".5"), T("5."), T("NaN"), T("Infinity"),
    T("-"), T("1e"), T("0x10"), T("1_000"),
])
case("number_0_1", {"type": "number", "minimum": 0, "maximum": 1}, [
    0, 1, 0.5, 0.999, 0.001, 1.5, -0.1, 2, 1.0, 0.0, T("1.00"), T("0.000"), T("1e-3", NOTE_NUMBER), T("-0", NOTE_NUMBER),
])
case("number_positive", {"type": "number", "exclusiveMinimum": 0}, [0.5, 1, 100, T("0.000001"), 0, -1, -0.5, 0.0, T("0.0000001", NOTE_NUMBER)])
case("number_negative_range", {"type": "number", "minimum": -10, "exclusiveMaximum": -2}, [
    -10, -9.5, -2.5, -2, -2.000001, -10.5, 0, -3, T("-2.0"), T("-10.0"),
])

# ---- strings ----
case("string_length", {"type": "string", "minLength": 2, "maxLength": 5}, [
    "a", "ab", "abcde", "abcdef", "日本", "😀😀", "😀", "\n\t", "a\"b\\", "", 12,
    T('"\\u0041\\u0042"'), T('"\\ud83d\\ude00"'), T('"\\ud83d\\ude00\\ud83d\\ude00"'), T('"a\\/b"'),
])
case("string_max_only", {"type": "string", "maxLength": 3}, ["", "abc", "abcd", "\u00e9\u00e9\u00e9", T('"\\u00e9"')])
case("string_pattern_anchored", {"type": "string", "pattern": "^[A-Z]{3}-\\d{3}$"}, [
    "ABC-123", "AB-123", "ABC-12", "abc-123", "XABC-123", "ABC-1234", V("ABC-123\n", NOTE_DOLLAR),
])
case("string_pattern_unanchored", {"type": "string", "pattern": "abc"}, [
    "abc", "xxabcxx", "abxc", "", "ABC", "a\"abc\"", "\n abc \t",
])
case("string_pattern_json_specials", {"type": "string", "pattern": "^[a-z\"\\\\/]+\\t?$"}, [
    "ab", "a\"b", "a\\b", "a/b", "ab\t", "\"\\", "aB", "", "a\nb", T('"a\\/b"'),
])
case("string_pattern_alternation_anchors", {"type": "string", "pattern": "^ab|cd$"}, [
    "ab", "abx", "xab", "cd", "xcd", "cdx", "", "abcd",
])
case("string_pattern_dot_classes", {"type": "string", "pattern": "^\\w+@\\w+\\.(com|org)$"}, [
    "a@b.com", "a_1@x9.org", "a@b.net", "@b.com", "a@b.comx", "a b@c.com",
])
case("string_pattern_control", {"type": "string", "pattern": "^[\\x00-\\x1f]+$"}, [
    "\n", "\u0001\u001f", "a", "\t\r\b\f", T('"\\u0001"'), T('"\\u001F"'),
])
case("format_date", {"type": "string", "format": "date"}, [
    "2024-01-31", "2024-02-29", "2023-02-29", "2000-02-29", "1900-02-29", "2024-04-31", "2024-13-01",
    "0000-01-01", "0001-01-01", "9999-12-31", "2024-1-01", "20240101", "2024-06-30", "2024-00-10", "2024-01-00",
])
case("format_time", {"type": "string", "format": "time"}, [
    "12:30:00Z", "23:59:59+02:00", "00:00:00.123456-05:30", "24:00:00Z", "12:60:00Z", "12:30:00",
    V("12:30:00z", NOTE_FORMAT), "12:30:00+24:00", V("23:59:60Z", NOTE_FORMAT),
])
case("format_date_time", {"type": "string", "format": "date-time"}, [
    "2024-02-29T12:00:00Z", "2023-02-29T12:00:00Z", "2024-01-01T00:00:00.5+01:00", "2024-01-01 00:00:00Z",
    "2024-01-01T00:00:00", V("2024-01-01t00:00:00z", NOTE_FORMAT), "2024-01-01T25:00:00Z",
])
case("format_uuid", {"type": "string", "format": "uuid"}, [
    "123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567e89b12d3a456426614174000",
    "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000",
])
case("format_with_redundant_lengths", {"type": "string", "format": "uuid", "minLength": 36, "maxLength": 36}, [
    "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-4266141740001", "x",
])
case("format_unknown_ignored", {"type": "string", "format": "email"}, ["a@b.c", "not an email", 1])

# ---- arrays / tuples ----
case("tuple_prefix_items", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}]}, [
    ["a", 1, True], ["a", 1], ["a"], [], ["a", "b"], [1], V(["a", 1, True, 5], NOTE_TUPLE),
])
case("tuple_items_false_min", {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}], "items": False, "minItems": 2}, [
    [1, 2], [1], [1, 2, 3], ["1", 2],
])
case("tuple_with_items", {"type": "array", "prefixItems": [{"const": "head"}], "items": {"type": "number"}, "maxItems": 3}, [
    ["head"], ["head", 1], ["head", 1, 2.5], ["head", 1, 2, 3], ["tail"], [], ["head", "x"],
])
case("draft7_items_array", {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": {"type": "boolean"},
}, [["a", 1], ["a", 1, True, False], ["a", 1, 2], [1, "a"], ["a"]])

# ---- combinations ----
case("all_of_merge", {
    "allOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "integer", "minimum": 0}}, "required": ["b"]},
    ],
}, [{"a": "x", "b": 1}, {"a": "x"}, {"b": 1}, {"a": "x", "b": -1}, {"a": 1, "b": 1}, V({"a": "x", "b": 1, "c": 2}, NOTE_EXTRA)])

case("all_of_ref_unevaluated", {
    "$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
    "allOf": [{"$ref": "#/$defs/base"}],
    "properties": {"name": {"type": "string"}},
    "unevaluatedProperties": False,
}, [{"id": 1}, {"id": 1, "name": "n"}, {"id": 1, "other": 2}, {"name": "n"}, {"id": "1"}])

case("all_of_bounds", {"allOf": [{"type": "integer", "minimum": 0}, {"type": "number", "maximum": 20}, {"exclusiveMaximum": 15}]}, [
    0, 14, 15, 20, -1, 7,
])

case("nullable_string", {"type": ["string", "null"], "maxLength": 3}, ["", "abc", "abcd", None, 0])
case("boolean_null", {"type": ["boolean", "null"]}, [True, False, None, 0, "true", T("True"), T("nul")])
case("empty_schema", {}, [None, True, 1, -2.5, "s", [], [1, [2]], {}, {"a": {"b": None}}, T("tru"), T("[1,]"), T("{'a': 1}")])
case("true_schema", True, [None, {"x": [1, "y"]}, T("")])
case("property_names_needing_escapes", {
    "type": "object",
    "properties": {"a\"b": {"type": "integer"}, "ключ": {"type": "string"}, "x\ny": {"type": "boolean"}, "back\\slash": {"type": "null"}},
    "required": ["a\"b"],
    "additionalProperties": False,
}, [{"a\"b": 1}, {"a\"b": 1, "ключ": "v", "x\ny": True, "back\\slash": None}, {"ключ": "v"}, {"a\"b": "1"},
    T('{"a\\u0022b": 1}', NOTE_ESCAPE)])

case("openai_create_event", {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "Event title", "minLength": 1, "maxLength": 40},
        "start": {"type": "string", "format": "date-time"},
        "duration_minutes": {"type": "integer", "minimum": 5, "maximum": 480},
        "attendees": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"email": {"type": "string"}, "optional": {"type": "boolean"}},
                "required": ["email"],
                "additionalProperties": False,
            },
            "maxItems": 10,
        },
        "priority": {"type": "string", "enum": ["low", "normal", "high"]},
        "location": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["title", "start", "duration_minutes", "attendees", "priority", "location"],
    "additionalProperties": False,
}, [
    {"title": "Standup", "start": "2024-05-01T09:00:00Z", "duration_minutes": 15, "attendees": [], "priority": "normal", "location": None},
    {"title": "Review", "start": "2024-05-01T09:00:00+02:00", "duration_minutes": 480,
     "attendees": [{"email": "a@b.c"}, {"email": "d@e.f", "optional": True}], "priority": "high", "location": "Room 1"},
    {"title": "", "start": "2024-05-01T09:00:00Z", "duration_minutes": 15, "attendees": [], "priority": "normal", "location": None},
    {"title": "Standup", "start": "2024-05-01", "duration_minutes": 15, "attendees": [], "priority": "normal", "location": None},
    {"title": "Standup", "start": "2024-05-01T09:00:00Z", "duration_minutes": 4, "attendees": [], "priority": "normal", "location": None},
    {"title": "Standup", "start": "2024-05-01T09:00:00Z", "duration_minutes": 15, "attendees": [], "priority": "urgent", "location": None},
    {"title": "Standup", "start": "2024-05-01T09:00:00Z", "duration_minutes": 15, "attendees": [{}], "priority": "low", "location": None},
    {"title": "Standup", "start": "2024-05-01T09:00:00Z", "duration_minutes": 15, "attendees": [], "priority": "low"},
    {"title": "x" * 41, "start": "2024-05-01T09:00:00Z", "duration_minutes": 15, "attendees": [], "priority": "low", "location": None},
])

def closed_object(properties, required):
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


case("deep_nesting", closed_object({"l1": closed_object({"l2": closed_object({"l3": {
    "type": "array", "items": closed_object({"l4": {"type": "string", "enum": ["x", "y"]}}, ["l4"])}}, ["l3"])}, ["l2"])}, ["l1"]), [
    {"l1": {"l2": {"l3": []}}}, {"l1": {"l2": {"l3": [{"l4": "x"}, {"l4": "y"}]}}}, {"l1": {"l2": {"l3": [{"l4": "z"}]}}},
    {"l1": {"l2": {}}},
])

case("pydantic_model", {
    "$defs": {
        "Address": {
            "properties": {
                "street": {"title": "Street", "type": "string"},
                "zip": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Zip"},
            },
            "required": ["street"],
            "title": "Address",
            "type": "object",
        }
    },
    "properties": {
        "name": {"title": "Name", "type": "string"},
        "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
        "tags": {"items": {"type": "string"}, "title": "Tags", "type": "array", "default": []},
    },
    "required": ["name"],
    "title": "User",
    "type": "object",
}, [
    {"name": "a"}, {"name": "a", "address": {"street": "s"}}, {"name": "a", "address": None, "tags": ["x", "y"]},
    {"name": "a", "address": {"street": "s", "zip": None}}, {"name": "a", "address": {"street": "s", "zip": "75001"}},
    {"name": "a", "address": {"zip": "1"}}, {"tags": []}, {"name": "a", "tags": [1]}, {"name": "a", "address": "s"},
])

case("any_of_branch_contradicting_type", {"type": ["string", "null"], "anyOf": [{"const": 1}, {"enum": ["x", None, 2]}]}, [
    "x", None, 1, 2, "y",
])

case("draft4_exclusive_boolean", {
    "$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 3,
}, [0, 1, 3, 4, -1])

# ---- regular expressions (re.fullmatch) ----
# (regex, candidates, candidates the documented ASCII readings may reject although Python matches)
REGEXES = [
    ("abc", ["abc", "ab", "abcd", ""], []),
    ("a|b|", ["a", "b", "", "ab"], []),
    ("(ab)+c?", ["ab", "abab", "ababc", "c", "abc", "aba"], []),
    ("[a-z]{2,4}", ["a", "ab", "abcd", "abcde", "aB"], []),
    ("\\d{3}-\\d{4}", ["555-1234", "5555-123", "555-12a4"], ["\u0663\u0663\u0663-1234"]),
    ("[^0-9]+", ["abc", "a1", "", "\n", "\u00e9"], []),
    ("a.c", ["abc", "a\nc", "a c", "a\u00e9c", "ac"], ["a\rc", "a\u2028c"]),
    ("x*?y", ["y", "xxy", "x"], []),
    ("(?:ab|cd){2}", ["abcd", "cdab", "ab", "abcdab"], []),
    ("\\w+@\\w+\\.com", ["a@b.com", "a_1@b2.com", "a@b.co", "@b.com"], ["\u00e9@b.com"]),
    ("[\\]\\-a]+", ["]", "-", "a-]", "b"], []),
    ("[-a]", ["-", "a", "b"], []),
    ("[a-]", ["-", "a", "b"], []),
    ("\\s+", [" ", "\t\n\r\f\v", "a", "\u00a0", "\u3000"], ["\u001c", "\u0085"]),
    ("\\S+", ["abc", "a b", "\u00e9", "\u00a0", "\u001c"], ["\ufeff"]),
    ("\\D", ["a", "1", "-"], ["\u00e9"]),
    ("\\W", ["-", "a", "_", " "], ["\u2013"]),
    ("colou?r", ["color", "colour", "colouur"], []),
    ("[\\x41-\\x43]+", ["ABC", "ABD", "CBA"], []),
    ("\\u00e9+", ["\u00e9", "\u00e9\u00e9", "e"], []),
    ("\u00e9|\u00fc", ["\u00e9", "\u00fc", "u"], []),
    ("[\U0001F600-\U0001F602]+", ["\U0001F600", "\U0001F601\U0001F602", "\U0001F603"], []),
    ("a{0}b", ["b", "ab"], []),
    ("(a|)+b", ["b", "ab", "aab", "a"], []),
    ("a{2,}", ["a", "aa", "aaaaa"], []),
    ("a{2}", ["a", "aa", "aaa"], []),
    ("[\\b]", ["\b", "b"], []),
    ("\\t\\n\\r\\f\\v\\0", ["\t\n\r\f\v\0", "tnrfv0"], []),
    ("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\\\/\\^\\$", [".*+?()[]{}|\\/^$", "a"], []),
    ("{", ["{", ""], []),
    ("a{1,2", ["a{1,2", "a"], []),
    ("x}]", ["x}]"], []),
    ("(a(b(c)))", ["abc", "ab"], []),
    ("^abc$", ["abc", "abc\n", "ab"], []),
    ("^(?:\\+|-)?[0-9]+(\\.[0-9]+)?$", ["1", "-1.5", "+10", "1.", ".5", "--1"], []),
    ("[A-Za-z_][A-Za-z0-9_]*", ["_x1", "x", "1x", ""], []),
    ("(true|false|null)", ["true", "false", "null", "nul", "truefalse"], []),
    ("\"[^\"]*\"", ["\"\"", "\"abc\"", "\"a\"b\"", "abc"], []),
    ("[^\\n]*", ["abc", "a\nb", ""], []),
    ("a??b+?c*?", ["b", "abbc", "abcc", "ac"], []),
    ("(?:[0-9a-f]{2}:){5}[0-9a-f]{2}", ["00:11:22:33:44:55", "00:11:22:33:44", "00:11:22:33:44:5g"], []),
    ("<[\\s\\S]*>", ["<a\nb>", "<\u00e9\u001c\ufeff\u2013>", "<>", "a"], []),
    ("[\\w\\W][\\d\\D]", ["\u00e9\u0663", "a1", "-\n", "a"], []),
]


def random_candidates(regex, rng, count=10):
    # ASCII only, without \r: there Python's classes and `.` agree with the documented reading, so no
    # candidate needs the "subset" mark. Characters of the pattern itself make matches likely.
    pool = sorted({c for c in regex if " " <= c <= "~"} | set("aZ09 _-.\n\t\"\\"))
    out = []
    for _ in range(count):
        out.append("".join(rng.choice(pool) for _ in range(rng.randrange(0, 7))))
    return out


def main():
    rng = random.Random(20240601)
    out = {
        "generator": "tests/sampler/gen_json_schema_cases.py",
        "python": sys.version.split()[0],
        "jsonschema": importlib.metadata.version("jsonschema"),
        "schemas": [],
        "regexes": [],
    }
    for name, schema, instances in SCHEMAS:
        cases = []
        for inst in instances:
            note = None
            if isinstance(inst, T):
                text, note = inst.text, inst.note
            elif isinstance(inst, V):
                text, note = canonical(inst.value), inst.note
            else:
                text = canonical(inst)
            entry = {"text": text, "valid": is_valid(schema, text)}
            if note:
                entry["note"] = note
            cases.append(entry)
        out["schemas"].append({"name": name, "schema": schema, "cases": cases})
    for regex, candidates, subset in REGEXES:
        compiled = re.compile(regex)
        cases = [{"text": s, "match": compiled.fullmatch(s) is not None} for s in candidates]
        cases += [{"text": s, "match": compiled.fullmatch(s) is not None, "subset": True} for s in subset]
        seen = {c["text"] for c in cases}
        for s in random_candidates(regex, rng):
            if s not in seen:
                seen.add(s)
                cases.append({"text": s, "match": compiled.fullmatch(s) is not None})
        out["regexes"].append({"regex": regex, "cases": cases})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "json_schema_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    n_cases = sum(len(s["cases"]) for s in out["schemas"])
    n_regex = sum(len(r["cases"]) for r in out["regexes"])
    print(f"{len(out['schemas'])} schemas, {n_cases} texts; {len(out['regexes'])} regexes, {n_regex} strings -> {path}")


if __name__ == "__main__":
    main()
