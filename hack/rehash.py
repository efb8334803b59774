#!/usr/bin/env python3
"""An independent implementation of throughline's rendered hash (README, "The
rendered hash"), written from the documented algorithm only.

Reads a JSON v1 List (the output of `throughline render -o json`) on stdin,
drops throughline's own Acceptance objects, and prints sha256:<hex>.
"""
import hashlib
import json
import math
import sys


def jcs_number(x):
    if isinstance(x, bool):
        raise TypeError("bool is not a number")
    if isinstance(x, int):
        if abs(x) > 2**53:
            raise ValueError("integer %d is outside the I-JSON range" % x)
        return str(x)
    if math.isnan(x) or math.isinf(x):
        raise ValueError("NaN and Infinity are not JSON")
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e21:
        return str(int(x))
    # ECMAScript Number.prototype.toString: shortest round-trip digits.
    r = repr(x)
    if "e" in r:
        mant, exp = r.split("e")
        exp = int(exp)
        if -7 < exp < 21:
            return format(x, "f").rstrip("0").rstrip(".")
        if mant.endswith(".0"):
            mant = mant[:-2]
        return "%se%s%d" % (mant, "+" if exp > 0 else "-", abs(exp))
    return r


def jcs_string(s):
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20:
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jcs(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return jcs_number(v)
    if isinstance(v, str):
        return jcs_string(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs(i) for i in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v.keys(), key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jcs_string(k) + ":" + jcs(v[k]) for k in keys) + "}"
    raise TypeError("unexpected %r" % type(v))


def identity(o):
    api = o.get("apiVersion", "")
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    md = o.get("metadata") or {}
    return tuple(x.encode("utf-8") for x in (group, o.get("kind", ""), md.get("namespace", ""), md.get("name", "")))


def main():
    doc = json.load(sys.stdin)
    objs = [o for o in doc["items"]
            if not (o.get("kind") == "Acceptance" and o.get("apiVersion", "").startswith("throughline.dev/"))]
    lines = sorted(((identity(o), (jcs(o) + "\n").encode("utf-8")) for o in objs))
    h = hashlib.sha256()
    for _, line in lines:
        h.update(line)
    print("sha256:" + h.hexdigest())


if __name__ == "__main__":
    main()
