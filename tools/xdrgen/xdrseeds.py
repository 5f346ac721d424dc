#!/usr/bin/env python3
"""
xdrseeds.py - write valid encodings of types of XDR descriptions: the seed
corpus of the fuzz target fuzz/fuzz_xdrgen.c, and (through the test that
decodes every seed) a check of the generated C codecs against a second,
independent encoder built on the same parsed description.

    xdrseeds.py --out DIR S.x:S.bounds[:I.x] TYPE... [S2.x:S2.bounds TYPE...]

TYPE is a type name, or a pattern ending in '*' (every type of S.x with
that prefix, "*4args" every name ending in 4args); I.x is a description
S.x imports types from. Each seed file holds the FNV-1a hash of the type's name
(4 bytes, big-endian) and then one encoded value. A union gets one seed
per arm, a variable array of unions (the COMPOUND op arrays) several seeds
with different operations. Values are small and deterministic: the same
description gives the same files.
"""
import argparse
import os
import random
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xdrgen  # noqa: E402  (the parser and the model)


def fnv1a(name):
    h = 0x811c9dc5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def pad(b):
    return b + b'\0' * ((4 - len(b) % 4) % 4)


class Sampler:
    """Encodes a random valid value of a type of spec."""

    def __init__(self, spec, seed):
        self.s = spec
        self.r = random.Random(seed)
        self.arm = None  # the arm the outermost union takes

    def u32(self, v):
        return struct.pack('>I', v & 0xFFFFFFFF)

    def prim(self, p):
        r = self.r
        if p == 'bool':
            return self.u32(r.randint(0, 1))
        if p in ('hyper', 'unsigned hyper', 'double'):
            return struct.pack('>Q', r.getrandbits(64))
        return self.u32(r.choice([0, 1, 7, 4096, r.getrandbits(32)]))

    def enum_value(self, d, avoid=()):
        values = [self.s.num(v) for _, v in d.values if self.s.num(v) not in avoid]
        return self.r.choice(values) if values else None

    def value(self, type_, depth):
        r = self.s.resolve(type_)
        if isinstance(r, str):
            return self.prim(r)
        if r.what == 'enum':
            return self.u32(self.enum_value(r))
        if r.what == 'typedef':
            return self.decl(r.decl, r.name, depth)
        if r.what == 'struct':
            return self.struct(r, depth)
        return self.union(r, depth)

    def struct(self, d, depth):
        fields = d.fields
        if not self.s.is_list(d):
            return b''.join(self.decl(f, f'{d.name}.{f.name}', depth) for f in fields)
        out = b''
        for i in range(self.r.randint(1, 3)):  # a list: one to three nodes
            out += self.u32(1) if i else b''
            out += b''.join(self.decl(f, f'{d.name}.{f.name}', depth) for f in fields[:-1])
        return out + self.u32(0)

    def union(self, d, depth):
        arms = list(d.arms) + ([(None, d.default)] if d.default else [])
        if self.arm is not None:
            labels, arm = arms[self.arm % len(arms)]
            self.arm = None
        else:
            labels, arm = self.r.choice(arms)
        if labels is None:  # the default arm: a value no case names
            taken = {self.s.num(v) for ls, _ in d.arms for v in ls}
            r = self.s.resolve(d.discr.type)
            disc = None
            if not isinstance(r, str):
                disc = self.enum_value(r, taken)
            elif r == 'bool':
                disc = next((v for v in (0, 1) if v not in taken), None)
            if disc is None and (r in ('int', 'unsigned int') or
                                 (not isinstance(r, str) and r.name in self.s.open)):
                disc = next(v for v in range(1 << 20) if v not in taken)
            if disc is None:
                raise xdrgen.XdrError(f'{d.name}: no value reaches its default arm')
        else:
            disc = self.s.num(self.r.choice(labels))
        return self.u32(disc) + self.decl(arm, f'{d.name}.{arm.name}', depth)

    def decl(self, d, key, depth):
        r = self.r
        if d.kind == 'void':
            return b''
        if d.kind == 'one':
            return self.value(d.type, depth)
        if d.kind == 'opt':
            if depth > 3 or r.random() < 0.3:
                return self.u32(0)
            return self.u32(1) + self.value(d.type, depth + 1)
        if d.kind == 'fixed':
            n = self.s.num(d.size)
            if d.type == 'opaque':
                return pad(bytes(r.getrandbits(8) for _ in range(n)))
            return b''.join(self.value(d.type, depth) for _ in range(n))
        _, _, limit = self.s.storage(d, key)
        if d.type == 'opaque':
            b = bytes(r.getrandbits(8) for _ in range(min(limit, r.randint(0, 24))))
            return self.u32(len(b)) + pad(b)
        if d.type == 'string':
            b = bytes(r.choice(b'abcdefghij.-_') for _ in range(min(limit, r.randint(1, 12))))
            return self.u32(len(b)) + pad(b)
        n = min(limit, r.randint(1, 3) if depth < 3 else 0)
        return self.u32(n) + b''.join(self.value(d.type, depth + 1) for _ in range(n))


def seeds_for(spec, name):
    """(file suffix, bytes) seeds of one type."""
    d = spec.names[name]
    r = spec.resolve(name)
    count = 1
    if not isinstance(r, str) and r.what == 'union':
        count = len(r.arms) + (1 if r.default else 0)
    elif name.startswith(('COMPOUND', 'CB_COMPOUND')):
        count = 8
    out = []
    for i in range(count):
        s = Sampler(spec, f'{name}/{i}')
        s.arm = i if count > 1 and not name.startswith(('COMPOUND', 'CB_COMPOUND')) else None
        out.append((f'{name}-{i}' if count > 1 else name, s.value(d.name, 0)))
    return out


def main():
    ap = argparse.ArgumentParser(description='seed inputs for fuzz/fuzz_xdrgen.c')
    ap.add_argument('--out', required=True)
    ap.add_argument('groups', nargs='+', help='S.x:S.bounds[:I.x] TYPE... ...')
    args = ap.parse_args()
    groups, cur = [], None
    for word in args.groups:
        if '.x:' in word:
            path, bounds, *imports = word.split(':')
            cur = (path, bounds, imports, [])
            groups.append(cur)
        elif cur is None:
            sys.exit(f'xdrseeds: {word}: name a description first (S.x:S.bounds)')
        else:
            cur[3].append(word)
    os.makedirs(args.out, exist_ok=True)
    written = 0
    try:
        for path, bounds, imports, patterns in groups:
            spec = xdrgen.load(path, imports, bounds)
            local = [d.name for d in spec.defs if d.what in ('enum', 'struct', 'union',
                                                              'typedef')]
            for pat in patterns:
                if pat.startswith('*'):
                    names = [n for n in local if n.endswith(pat[1:])]
                elif pat.endswith('*'):
                    names = [n for n in local if n.startswith(pat[:-1])]
                else:
                    names = [pat]
                if not names:
                    raise xdrgen.XdrError(f'{pat}: no such type in {path}')
                for name in names:
                    for suffix, data in seeds_for(spec, name):
                        with open(os.path.join(args.out, f'seed-{suffix}'), 'wb') as f:
                            f.write(struct.pack('>I', fnv1a(name)) + data)
                        written += 1
    except xdrgen.XdrError as e:
        sys.exit(f'xdrseeds: {e}')
    print(f'xdrseeds: {written} seeds in {args.out}')


if __name__ == '__main__':
    main()
