#!/usr/bin/env python3
"""Writes Jane Austen's six novels as plain text, one file each, from Debian's r-cran-janeaustenr.

usage: austen-texts.py PACKAGE_ROOT OUT_DIR

PACKAGE_ROOT is the unpacked .deb (`dpkg-deb -x`); its data/Rdata.rdb is R's lazy-load database, one
character vector per novel, a line of the Project Gutenberg text per element. The index Rdata.rdx
(gzip) gives each vector's offset and length; each entry is a 4-byte length and a zlib stream of R's
XDR serialization (R Internals, "Serialization Formats"). This reads the few types those files hold and
refuses any other, so that a changed package stops the set-up instead of writing a wrong corpus.
Lines are written as they are, so a blank line still ends a paragraph for `lenscheck make-corpus`.
"""
import gzip
import os
import struct
import sys
import zlib

NILVALUE, REF, SYMBOL, PAIRLIST, CHARSXP = 254, 255, 1, 2, 9
LOGICAL, INTEGER, STRING, LIST = 10, 13, 16, 19


class Unserializer:
    def __init__(self, data, origin):
        self.data, self.at, self.origin, self.refs = data, 0, origin, []

    def fail(self, why):
        raise SystemExit(f"{self.origin}: {why} at byte {self.at}: not the R data this script reads")

    def integers(self, n):
        if self.at + 4 * n > len(self.data):
            self.fail("truncated")
        values = struct.unpack_from(f">{n}i", self.data, self.at)
        self.at += 4 * n
        return values

    def read(self):
        if self.data[:2] != b"X\n":
            self.fail("no XDR serialization header")
        self.at = 2
        version = self.integers(3)[0]
        if version == 3:
            encoding_length = self.integers(1)[0]  # then the native encoding's name, skipped
            self.at += encoding_length
        elif version != 2:
            self.fail(f"serialization version {version}")
        return self.item()

    def item(self):
        flags = self.integers(1)[0]
        kind, has_attributes, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind == NILVALUE:
            return None
        if kind == REF:
            return self.refs[(flags >> 8) - 1]
        if kind == SYMBOL:
            name = self.item()
            self.refs.append(name)
            return name
        if kind == CHARSXP:
            n = self.integers(1)[0]
            if n == -1:
                return None  # NA_character_
            text = self.data[self.at:self.at + n].decode("utf-8")
            self.at += n
            return text
        if kind == PAIRLIST:  # attributes: a list of (tag, value)
            if has_attributes:
                self.item()
            tag = self.item() if has_tag else None
            value = self.item()
            rest = self.item()
            return [(tag, value)] + (rest or [])
        if kind in (STRING, LIST):
            value = [self.item() for _ in range(self.integers(1)[0])]
        elif kind in (LOGICAL, INTEGER):
            value = list(self.integers(self.integers(1)[0]))
        else:
            self.fail(f"R type {kind}")
        attributes = dict(self.item()) if has_attributes else {}
        return value, attributes


def unserialize(data, origin):
    return Unserializer(data, origin).read()


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    database = os.path.join(sys.argv[1], "usr/lib/R/site-library/janeaustenr/data/Rdata")
    out_dir = sys.argv[2]
    with open(database + ".rdx", "rb") as f:
        (index, names) = unserialize(gzip.decompress(f.read()), database + ".rdx")
    variables, variable_attributes = index[names["names"][0].index("variables")]
    with open(database + ".rdb", "rb") as f:
        entries = f.read()
    os.makedirs(out_dir, exist_ok=True)
    for name, (span, _) in zip(variable_attributes["names"][0], variables):
        offset, length = span
        blob = entries[offset:offset + length]
        lines, _ = unserialize(zlib.decompress(blob[4:]), f"{database}.rdb ({name})")
        if not all(isinstance(line, str) for line in lines):
            raise SystemExit(f"{database}.rdb ({name}): not a character vector of lines")
        with open(os.path.join(out_dir, f"{name}.txt"), "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        print(f"{name}: {len(lines)} lines")


if __name__ == "__main__":
    main()
