#!/usr/bin/env python3
"""
xdrgen.py - C types and codecs from an XDR description (the RFC 4506
language, with RFC 5531 program definitions), on the bounded streams of
src/rpc/xdr.h. The build runs it (src/xdr/CMakeLists.txt):

    xdrgen.py --bounds S.bounds [--import O.x]... --out-dir DIR S.x

writes DIR/S.h, DIR/S.c and DIR/S_const.h; S, the file's stem, prefixes
every codec.

Design note (docs/xdr.md says the same for readers of the generated code).

Every named type T of the description becomes a C type (an enum becomes
its constants plus `typedef int32_t T`, a struct or union `struct T`, a
typedef a C typedef) with
    int S_dec_T(struct xdr_dec *x, T *v);       0, -EBADMSG, -E2BIG, -ENOMSG
    int S_enc_T(struct xdr_enc *x, const T *v); 0, -EMSGSIZE, -EINVAL
and a row in S_xdr_types[]; every procedure argument and result type also
gets S_rpc_dec_T/S_rpc_enc_T with the signatures of an svc_proc row and
of rpc_clnt_call() (void pointers). Every enumeration E also gets
    const char *E_name(int32_t v);              "NFS4ERR_DELAY", NULL if unlisted
and every union U that S.bounds declares "status U VALUE" (each arm starts
with a value of VALUE's enumeration E: a struct's first member or a
union's discriminant, recursively; generation fails otherwise)
    E U_status(const struct U *v);              VALUE for a discriminant without an arm
    int U_set_status(struct U *v, E status);    0, -EINVAL for one without an arm
The constants, enumerations and E_name() are declared in S_const.h, which
includes nothing of the codecs (a layer that knows no XDR may use it).

Rules the generated decoders keep:
 1. Every count is bounded: an array count or opaque/string length by the
    spec's bound <N> (over it: -EBADMSG), by the bytes left in the stream
    (each element takes at least its minimum encoded size: -EBADMSG), and
    by the limit configured in S.bounds (-E2BIG). Every unbounded <> must
    have a configured limit (or a default there), or generation fails.
 2. Nothing is allocated in proportion to a claimed count: an array is
    allocated only after rule 1 has checked that the stream holds its
    elements, and only from the arena attached to the stream (xdr.h
    invariant 7), which has a cap (-E2BIG past it). Small items are not
    allocated at all: an opaque or string whose limit is at most 128 bytes
    and an array of scalars that fits in 128 bytes are stored inline (file
    handles, bitmaps, gids); a larger opaque or string points into the
    receive buffer (WRITE data is never copied); other arrays and optional
    data come from the arena. Releasing a decode is resetting its arena.
 3. Strings are opaques without an embedded NUL; neither is NUL-terminated.
 4. Enumerations are closed (RFC 4506 4.3: an unassigned value is not a
    valid encoding: -EBADMSG) unless S.bounds declares one open, for
    values the protocol answers with its own error (an unknown NFSv4
    operation is OP_ILLEGAL). A union whose discriminant matches no arm
    takes its default arm; without one it is -EBADMSG, or -ENOMSG when the
    discriminant is an open enumeration: the discriminant is stored, so the
    caller sees the unknown value; nothing after it was read.
 5. Optional data (T *p) is a pointer, NULL when absent. A struct whose
    last member points to its own type is a list and is decoded and
    encoded iteratively (no recursion on hostile input); any other
    recursive type is refused at generation.
 6. Fields are decoded in order: after a failure, the fields before the
    failing one hold their values, and a variable array's len counts its
    complete elements (an op-by-op COMPOUND decoder relies on it).
 7. Encoders never allocate and never free; a length over the declared
    limit (or a discriminant or closed enumeration value without a case)
    is -EINVAL; opaque fields declared "splice" in S.bounds are spliced
    into the message without copying (xdr.h invariant 6).
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UINT32_MAX = 0xFFFFFFFF
INLINE_MAX = 128  # bytes: inline storage for small opaques, strings, scalar arrays

# XDR primitive -> (C type, xdr.h helper suffix, encoded size)
PRIMS = {
    'int': ('int32_t', 'i32', 4),
    'unsigned int': ('uint32_t', 'u32', 4),
    'hyper': ('int64_t', 'i64', 8),
    'unsigned hyper': ('uint64_t', 'u64', 8),
    'bool': ('bool', 'bool', 4),
    'float': ('float', 'float', 4),
    'double': ('double', 'double', 8),
}
# names the NFSv4 descriptions use for primitives (RFC 7863's basic typedefs)
ALIASES = {'int32_t': 'int', 'uint32_t': 'unsigned int', 'int64_t': 'hyper',
           'uint64_t': 'unsigned hyper', 'unsigned': 'unsigned int'}
KEYWORDS = {'bool', 'case', 'const', 'default', 'double', 'enum', 'float', 'hyper', 'opaque',
            'string', 'struct', 'switch', 'typedef', 'union', 'unsigned', 'void', 'program',
            'version', 'int'}
C_KEYWORDS = {'auto', 'break', 'case', 'char', 'const', 'continue', 'default', 'do', 'double',
              'else', 'enum', 'extern', 'float', 'for', 'goto', 'if', 'inline', 'int', 'long',
              'register', 'restrict', 'return', 'short', 'signed', 'sizeof', 'static',
              'struct', 'switch', 'typedef', 'union', 'unsigned', 'void', 'volatile', 'while'}


class XdrError(Exception):
    pass


def cname(name):
    return name + '_' if name in C_KEYWORDS else name


# ---- the language --------------------------------------------------------

TOKEN = re.compile(r'(?P<skip>\s+|/\*.*?\*/)|(?P<num>-?0[xX][0-9a-fA-F]+|-?[0-9]+)'
                   r'|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>[{}()\[\]<>;,=:*])', re.S)


def lex(text, path):
    toks, pos, line = [], 0, 1
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise XdrError(f'{path}:{line}: unexpected {text[pos]!r}')
        if not m.group('skip'):
            toks.append((m.group(), line))
        line += m.group().count('\n')
        pos = m.end()
    toks.append(('<end>', line))
    return toks


class Decl:
    """One declaration: kind 'one' (T x), 'fixed' (T x[n]), 'var' (T x<n>),
    'opt' (T *x) or 'void'; size is the bound's text, None for <>."""

    def __init__(self, kind, type_, name, size, line):
        self.kind, self.type, self.name, self.size, self.line = kind, type_, name, size, line


class Def:
    """A definition: what is 'const', 'enum', 'struct', 'union', 'typedef'
    or 'program'; the parser adds the fields of each kind."""

    def __init__(self, what, name, line, spec):
        self.what, self.name, self.line, self.spec = what, name, line, spec


class Parser:
    def __init__(self, text, path, spec):
        self.toks, self.i, self.path, self.spec = lex(text, path), 0, path, spec

    def peek(self):
        return self.toks[self.i][0]

    def line(self):
        return self.toks[self.i][1]

    def fail(self, msg):
        raise XdrError(f'{self.path}:{self.line()}: {msg}')

    def take(self, want=None):
        tok = self.peek()
        if want is not None and tok != want:
            self.fail(f'expected {want!r}, found {tok!r}')
        if tok == '<end>':
            self.fail('unexpected end of file')
        self.i += 1
        return tok

    def accept(self, tok):
        if self.peek() == tok:
            self.i += 1
            return True
        return False

    def ident(self):
        tok = self.take()
        if not re.match(r'[A-Za-z_]', tok) or tok in KEYWORDS:
            self.fail(f'expected a name, found {tok!r}')
        return tok

    def value(self):
        tok = self.take()
        if not re.match(r'-?[0-9A-Za-z_]', tok):
            self.fail(f'expected a value, found {tok!r}')
        return tok

    def type_spec(self):
        tok = self.take()
        if tok == 'unsigned' and self.peek() in ('int', 'hyper'):
            return 'unsigned ' + self.take()
        if tok in ('struct', 'union', 'enum'):
            self.fail(f'inline {tok} definitions are not supported: name the type')
        if tok in ('int', 'hyper', 'bool', 'float', 'double'):
            return tok
        if tok == 'quadruple':
            self.fail('quadruple is not supported')
        self.i -= 1
        name = self.ident()
        return ALIASES.get(name, name)

    def declaration(self):
        line = self.line()
        if self.accept('void'):
            return Decl('void', None, None, None, line)
        if self.peek() in ('opaque', 'string'):
            type_ = self.take()
        else:
            type_ = self.type_spec()
        if self.accept('*'):
            return Decl('opt', type_, self.ident(), None, line)
        name = self.ident()
        if self.accept('['):
            if type_ == 'string':
                self.fail(f'string {name} needs <n>')
            size = self.value()
            self.take(']')
            return Decl('fixed', type_, name, size, line)
        if self.accept('<'):
            size = None if self.peek() == '>' else self.value()
            self.take('>')
            return Decl('var', type_, name, size, line)
        if type_ in ('opaque', 'string'):
            self.fail(f'{type_} {name} needs [n] or <n>')
        return Decl('one', type_, name, None, line)

    def definition(self):
        line, what = self.line(), self.take()
        if what == 'const':
            d = Def('const', self.ident(), line, self.spec)
            self.take('=')
            d.value = self.value()
        elif what == 'typedef':
            decl = self.declaration()
            if decl.kind == 'void':
                self.fail('typedef void')
            d = Def('typedef', decl.name, line, self.spec)
            d.decl = decl
        elif what == 'enum':
            d = Def('enum', self.ident(), line, self.spec)
            d.values = []
            self.take('{')
            while True:
                name = self.ident()
                self.take('=')
                d.values.append((name, self.value()))
                if not self.accept(','):
                    break
            self.take('}')
        elif what == 'struct':
            d = Def('struct', self.ident(), line, self.spec)
            d.fields = []
            self.take('{')
            while not self.accept('}'):
                decl = self.declaration()
                if decl.kind == 'void':
                    self.fail('void member')
                d.fields.append(decl)
                self.take(';')
        elif what == 'union':
            d = Def('union', self.ident(), line, self.spec)
            self.take('switch')
            self.take('(')
            d.discr = self.declaration()
            self.take(')')
            self.take('{')
            d.arms, d.default = [], None
            while self.peek() == 'case':
                labels = []
                while self.accept('case'):
                    labels.append(self.value())
                    self.take(':')
                d.arms.append((labels, self.declaration()))
                self.take(';')
            if self.accept('default'):
                self.take(':')
                d.default = self.declaration()
                self.take(';')
            self.take('}')
        elif what == 'program':
            d = Def('program', self.ident(), line, self.spec)
            d.versions = []
            self.take('{')
            while self.accept('version'):
                vname, procs = self.ident(), []
                self.take('{')
                while not self.accept('}'):
                    res = None if self.accept('void') else self.type_spec()
                    pname = self.ident()
                    self.take('(')
                    arg = None if self.accept('void') else self.type_spec()
                    self.take(')')
                    self.take('=')
                    procs.append((pname, self.value(), arg, res))
                    self.take(';')
                self.take('=')
                d.versions.append((vname, self.value(), procs))
                self.take(';')
            self.take('}')
            self.take('=')
            d.number = self.value()
        else:
            self.fail(f'expected a definition, found {what!r}')
        self.take(';')
        return d

    def parse(self):
        defs = []
        while self.peek() != '<end>':
            defs.append(self.definition())
        return defs


# ---- the description, with its bounds ------------------------------------

class Spec:
    """A parsed description plus the ones it imports (whose types it may
    use but does not emit) and its bounds file."""

    def __init__(self, path, imports=(), bounds=None):
        self.path, self.stem = path, os.path.splitext(os.path.basename(path))[0]
        self.defs, self.names, self.consts = [], {}, {}
        self.imported = []
        for ipath in imports:
            other = Spec(ipath)
            self.imported.append(other)
            for d in other.defs:
                self.add(d)
        with open(path) as f:
            for d in Parser(f.read(), path, self).parse():
                self.add(d)
                self.defs.append(d)
        self.limits, self.defaults, self.open, self.splice = {}, {}, set(), set()
        self.status = {}  # union -> (the status of a discriminant without an arm, where)
        self.used_keys = set()
        if bounds:
            self.read_bounds(bounds)

    def add(self, d):
        if d.name in self.names or d.name in self.consts:
            raise XdrError(f'{d.spec.path}:{d.line}: {d.name} defined twice')
        if d.what == 'const':
            self.consts[d.name] = d
        elif d.what == 'enum':
            for name, _ in d.values:
                if name in self.consts:
                    raise XdrError(f'{d.spec.path}:{d.line}: {name} defined twice')
                self.consts[name] = d
            self.names[d.name] = d
        elif d.what != 'program':
            self.names[d.name] = d

    def fail(self, d, msg):
        raise XdrError(f'{d.spec.path}:{d.line}: {msg}')

    def num(self, text):
        """The value of a number, a constant or an enumerator."""
        if text in ('TRUE', 'FALSE'):
            return int(text == 'TRUE')
        if re.match(r'-?[0-9]', text):
            return int(text, 0)
        d = self.consts.get(text)
        if d is None:
            raise XdrError(f'{self.path}: unknown constant {text}')
        if d.what == 'const':
            return self.num(d.value)
        return self.num(dict(d.values)[text])

    # -- bounds file --

    def read_bounds(self, path):
        with open(path) as f:
            for n, raw in enumerate(f, 1):
                words = raw.split('#', 1)[0].split()
                where = f'{path}:{n}'
                if not words:
                    continue
                if words[0] == 'bound' and len(words) == 3:
                    self.limits[words[1]] = (self.num(words[2]), where)
                elif words[0] == 'default' and len(words) == 3 and \
                        words[1] in ('opaque', 'string', 'array'):
                    self.defaults[words[1]] = self.num(words[2])
                elif words[0] == 'open' and len(words) == 2:
                    d = self.names.get(words[1])
                    if d is None or d.what != 'enum':
                        raise XdrError(f'{where}: {words[1]} is not an enumeration')
                    self.open.add(words[1])
                elif words[0] == 'splice' and len(words) == 2:
                    self.splice.add(words[1])
                elif words[0] == 'status' and len(words) == 3:
                    d = self.names.get(words[1])
                    if d is None or d.what != 'union' or d.spec is not self:
                        raise XdrError(f'{where}: {words[1]} is not a union of this description')
                    e = self.consts.get(words[2])
                    if e is None or e.what != 'enum':
                        raise XdrError(f'{where}: {words[2]} is not an enumerator')
                    self.status[words[1]] = (words[2], where)
                else:
                    raise XdrError(f'{where}: expected "bound KEY N", "default opaque|string|'
                                   f'array N", "open ENUM", "splice KEY" or "status UNION '
                                   f'VALUE"')

    def check_keys(self):
        """Every key of the bounds file names a variable-length item here."""
        for key, (_, where) in self.limits.items():
            if key not in self.used_keys:
                raise XdrError(f'{where}: {key} declares no variable-length item of '
                               f'{os.path.basename(self.path)}')
        for key in self.splice:
            if key not in self.used_keys:
                raise XdrError(f'splice {key}: no such variable-length opaque')

    # -- types --

    def resolve(self, type_):
        """Follow plain typedefs (typedef T name;) to a primitive name or
        to the definition that gives the type its shape."""
        while type_ not in PRIMS and type_ not in ('opaque', 'string'):
            d = self.names.get(type_)
            if d is None:
                raise XdrError(f'{self.path}: unknown type {type_}')
            if d.what != 'typedef' or d.decl.kind != 'one':
                return d
            type_ = d.decl.type
        return type_

    def scalar_size(self, type_):
        """Encoded size of a type stored as a C scalar, else None."""
        r = self.resolve(type_)
        if isinstance(r, str):
            return PRIMS[r][2] if r in PRIMS else None
        return 4 if r.what == 'enum' else None

    def ctype(self, type_):
        if type_ in PRIMS:
            return PRIMS[type_][0]
        d = self.names.get(type_)
        if d is None:
            raise XdrError(f'{self.path}: unknown type {type_}')
        return f'struct {type_}' if d.what in ('struct', 'union') else type_

    def storage(self, decl, key):
        """How a variable-length declaration is held: ('inline' | 'ref' |
        'arena', the spec's bound, the limit) (rules 1 and 2)."""
        self.used_keys.add(key)
        bound = self.num(decl.size) if decl.size is not None else UINT32_MAX
        limit = self.limits[key][0] if key in self.limits else None
        if limit is None:
            if decl.size is None:
                cat = decl.type if decl.type in ('opaque', 'string') else 'array'
                limit = self.defaults.get(cat)
                if limit is None:
                    raise XdrError(f'{self.path}:{decl.line}: {key} is unbounded (<>): declare '
                                   f'"bound {key} N" or "default {cat} N" in its bounds file')
            else:
                limit = bound
        if limit > bound:
            raise XdrError(f'{self.path}:{decl.line}: {key}: limit {limit} exceeds the '
                           f'protocol bound {bound}')
        if decl.type in ('opaque', 'string'):
            mode = 'inline' if limit <= INLINE_MAX else 'ref'
        else:
            size = self.scalar_size(decl.type)
            mode = 'inline' if size and limit * size <= INLINE_MAX else 'arena'
        if key in self.splice and (decl.type != 'opaque' or mode != 'ref'):
            raise XdrError(f'splice {key}: only a variable-length opaque over {INLINE_MAX} '
                           f'bytes can be spliced')
        return mode, bound, limit

    def minwire(self, type_, seen=()):
        """The fewest bytes an encoding of the type can take."""
        r = self.resolve(type_)
        if isinstance(r, str):
            return PRIMS[r][2]
        if r.name in seen:
            raise XdrError(f'{r.spec.path}:{r.line}: {r.name} contains itself')
        seen = seen + (r.name,)
        if r.what == 'enum':
            return 4
        if r.what == 'typedef':
            return self.decl_minwire(r.decl, seen)
        if r.what == 'struct':
            return sum(self.decl_minwire(f, seen) for f in r.fields)
        arms = [a for _, a in r.arms] + ([r.default] if r.default else [])
        return 4 + min(self.decl_minwire(a, seen) for a in arms)

    def decl_minwire(self, d, seen=()):
        if d.kind == 'void':
            return 0
        if d.kind in ('var', 'opt'):
            return 4
        if d.kind == 'one':
            return self.minwire(d.type, seen)
        n = self.num(d.size)
        if d.type == 'opaque':
            return (n + 3) & ~3
        return n * self.minwire(d.type, seen)

    def opt_target(self, d):
        """The struct an optional declaration points to (also through a
        typedef of a pointer), else None."""
        while d.kind == 'one' and d.type in self.names and \
                self.names[d.type].what == 'typedef':
            d = self.names[d.type].decl
        return d.type if d.kind == 'opt' else None

    def is_list(self, d):
        return d.what == 'struct' and self.opt_target(d.fields[-1]) == d.name

    def members(self, d):
        """(key, declaration) of everything a definition declares."""
        if d.what == 'typedef':
            return [(d.name, d.decl)]
        if d.what == 'struct':
            return [(f'{d.name}.{f.name}', f) for f in d.fields]
        if d.what == 'union':
            arms = [a for _, a in d.arms] + ([d.default] if d.default else [])
            return [(f'{d.name}.{a.name}', a) for a in arms if a.kind != 'void']
        return []

    def check_names(self):
        """Every type a definition uses is defined."""
        for d in self.defs:
            used = [m for _, m in self.members(d)] + ([d.discr] if d.what == 'union' else [])
            for m in used:
                if m.type not in PRIMS and m.type not in ('opaque', 'string', None) and \
                        m.type not in self.names:
                    raise XdrError(f'{d.spec.path}:{m.line}: unknown type {m.type}')
            if d.what == 'program':
                for _, _, procs in d.versions:
                    for _, _, arg, res in procs:
                        for t in (arg, res):
                            if t is not None and t not in PRIMS and t not in self.names:
                                raise XdrError(f'{d.spec.path}:{d.line}: unknown type {t}')

    def check_recursion(self):
        """Rule 5: no type reaches itself except a list's last member."""
        state = {}

        def visit(name, path):
            d = self.names.get(name)
            if d is None or d.spec is not self:
                return
            if state.get(name) == 'done':
                return
            if state.get(name) == 'active':
                raise XdrError(f'{d.spec.path}:{d.line}: recursive type {" -> ".join(path)}: '
                               f'only a struct whose last member points to its own type '
                               f'(a list) is supported')
            state[name] = 'active'
            for i, (_, m) in enumerate(self.members(d)):
                if m.kind == 'void' or m.type in PRIMS or m.type in ('opaque', 'string'):
                    continue
                if self.is_list(d) and i == len(d.fields) - 1:
                    continue
                visit(m.type, path + [m.type])
            state[name] = 'done'

        for d in self.defs:
            if d.what not in ('const', 'program', 'enum'):
                visit(d.name, [d.name])


# ---- C emission -----------------------------------------------------------

class Fn:
    """The body of one generated function: its lines and the locals they use."""

    def __init__(self):
        self.lines, self.locals = [], set()

    def emit(self, ind, text):
        self.lines.append('\t' * ind + text)

    def call(self, ind, expr):
        self.locals.add('err')
        self.emit(ind, f'if ((err = {expr}))')
        self.emit(ind + 1, 'return err;')

    def body(self):
        lines = self.lines
        # a function that ends in "if ((err = f())) return err; return 0;"
        # ends in "return f();"
        if len(lines) >= 3 and lines[-1] == '\treturn 0;' and lines[-2] == '\t\treturn err;' \
                and lines[-3].startswith('\tif ((err = ') and \
                (len(lines) == 3 or not lines[-4].startswith('\tfor')):
            lines = lines[:-3] + ['\treturn ' + lines[-3][len('\tif ((err = '):-2] + ';']
            if not any(re.search(r'\berr\b', ln) for ln in lines):
                self.locals.discard('err')
        decls = {'err': 'int err;', 'n': 'uint32_t n;', 'i': 'uint32_t i;',
                 'more': 'bool more;', 'p': 'const uint8_t *p;', 's': 'const char *s;',
                 'e': 'int32_t e;'}
        head = ['\t' + decls[k] for k in ('err', 'n', 'i', 'more', 'p', 's', 'e')
                if k in self.locals]
        return head + ([''] if head else []) + lines


def member(lv, field):
    return f'v->{field}' if lv == '(*v)' else f'{lv}.{field}'


def addr(lv):
    if lv.startswith('(*') and lv.endswith(')'):
        return lv[2:-1]
    return f'&{lv}'


class Gen:
    def __init__(self, spec):
        self.s = spec
        self.p = spec.stem

    def fname(self, type_):
        """Prefix of the functions of a named type (its own spec's stem)."""
        return self.s.names[type_].spec.stem

    # -- decoding --

    def dec_value(self, fn, type_, lv, ind):
        r = self.s.resolve(type_)
        if isinstance(r, str):
            fn.call(ind, f'xdr_dec_{PRIMS[r][1]}(x, {addr(lv)})')
        else:
            fn.call(ind, f'{self.fname(r.name)}_dec_{r.name}(x, {addr(lv)})')

    def dec_decl(self, fn, d, lv, key, ind):
        s = self.s
        if d.kind == 'void':
            return
        if d.kind == 'one':
            return self.dec_value(fn, d.type, lv, ind)
        if d.kind == 'opt':
            ptr = '*v' if lv == '(*v)' else lv
            fn.locals.add('more')
            fn.call(ind, f'xdr_dec_more(x, {s.minwire(d.type)}, &more)')
            fn.emit(ind, f'{ptr} = NULL;')
            fn.emit(ind, 'if (more) {')
            fn.emit(ind + 1, f'if (!({ptr} = xdr_dec_alloc(x, 1, sizeof(*{ptr}))))')
            fn.emit(ind + 2, 'return -E2BIG;')
            self.dec_value(fn, d.type, f'(*{ptr})', ind + 1)
            fn.emit(ind, '}')
            return
        if d.kind == 'fixed':
            if d.type == 'opaque':
                return fn.call(ind, f'xdr_dec_fixed(x, {lv}, {d.size})')
            fn.locals.add('i')
            fn.emit(ind, f'for (i = 0; i < {d.size}; i++)')
            return self.dec_value(fn, d.type, f'{lv}[i]', ind + 1)
        mode, bound, limit = s.storage(d, key)
        b = 'UINT32_MAX' if bound == UINT32_MAX else str(bound)
        ln, val = member(lv, 'len'), member(lv, 'val')
        if d.type in ('opaque', 'string'):
            what, tmp = ('opaque', 'p') if d.type == 'opaque' else ('string', 's')
            if mode == 'ref':
                return fn.call(ind, f'xdr_dec_{what}_lim(x, {b}, {limit}, &{val}, &{ln})')
            fn.locals.add(tmp)
            fn.call(ind, f'xdr_dec_{what}_lim(x, {b}, {limit}, &{tmp}, &{ln})')
            fn.emit(ind, f'memcpy({val}, {tmp}, {ln});')
            return
        fn.locals.add('n')
        fn.call(ind, f'xdr_dec_len(x, {b}, {limit}, {s.minwire(d.type)}, &n)')
        fn.emit(ind, f'{ln} = 0;')
        if mode == 'arena':
            fn.emit(ind, f'if (!({val} = xdr_dec_alloc(x, n, sizeof(*{val}))) && n)')
            fn.emit(ind + 1, 'return -E2BIG;')
        fn.emit(ind, f'for (; {ln} < n; {ln}++)')
        self.dec_value(fn, d.type, f'{val}[{ln}]', ind + 1)

    # -- encoding --

    def enc_value(self, fn, type_, lv, ind):
        r = self.s.resolve(type_)
        if isinstance(r, str):
            fn.call(ind, f'xdr_enc_{PRIMS[r][1]}(x, {lv})')
        else:
            fn.call(ind, f'{self.fname(r.name)}_enc_{r.name}(x, {addr(lv)})')

    def enc_decl(self, fn, d, lv, key, ind):
        s = self.s
        if d.kind == 'void':
            return
        if d.kind == 'one':
            return self.enc_value(fn, d.type, lv, ind)
        if d.kind == 'opt':
            ptr = '*v' if lv == '(*v)' else lv
            fn.call(ind, f'xdr_enc_bool(x, {ptr} != NULL)')
            fn.emit(ind, f'if ({ptr})')
            return self.enc_value(fn, d.type, f'(*{ptr})', ind + 1)
        if d.kind == 'fixed':
            if d.type == 'opaque':
                return fn.call(ind, f'xdr_enc_fixed(x, {lv}, {d.size})')
            fn.locals.add('i')
            fn.emit(ind, f'for (i = 0; i < {d.size}; i++)')
            return self.enc_value(fn, d.type, f'{lv}[i]', ind + 1)
        mode, _, limit = s.storage(d, key)
        ln, val = member(lv, 'len'), member(lv, 'val')
        fn.emit(ind, f'if ({ln} > {limit})')
        fn.emit(ind + 1, 'return -EINVAL;')
        if d.type in ('opaque', 'string'):
            how = 'xdr_enc_opaque_splice' if key in s.splice else 'xdr_enc_opaque'
            return fn.call(ind, f'{how}(x, {val}, {ln})')
        fn.locals.add('i')
        fn.call(ind, f'xdr_enc_u32(x, {ln})')
        fn.emit(ind, f'for (i = 0; i < {ln}; i++)')
        self.enc_value(fn, d.type, f'{val}[i]', ind + 1)

    # -- definitions --

    def ctype_of(self, d):
        """The C type a definition's functions take a pointer to."""
        return f'struct {d.name}' if d.what in ('struct', 'union') else d.name

    def cdecl(self, d, key):
        s, name = self.s, cname(d.name)
        if d.kind == 'one':
            return f'{s.ctype(d.type)} {name}'
        if d.kind == 'opt':
            return f'{s.ctype(d.type)} *{name}'
        if d.kind == 'fixed':
            elem = 'uint8_t' if d.type == 'opaque' else s.ctype(d.type)
            return f'{elem} {name}[{d.size}]'
        mode, _, limit = s.storage(d, key)
        if d.type == 'opaque':
            elem = 'uint8_t' if mode == 'inline' else 'const uint8_t'
        elif d.type == 'string':
            elem = 'char' if mode == 'inline' else 'const char'
        else:
            elem = s.ctype(d.type)
        val = f'val[{limit}]' if mode == 'inline' else '*val'
        return f'struct {{ uint32_t len; {elem} {val}; }} {name}'

    def type_deps(self, d):
        """Local definitions that must be complete before d's C definition."""
        deps = []
        for key, m in self.s.members(d) + ([('', d.discr)] if d.what == 'union' else []):
            if m.kind == 'void' or m.type in PRIMS or m.type in ('opaque', 'string'):
                continue
            t = self.s.names[m.type]
            if t.spec is not self.s or t.what == 'enum':
                continue
            by_pointer = m.kind == 'opt' or \
                (m.kind == 'var' and self.s.storage(m, key)[0] == 'arena')
            if t.what in ('struct', 'union') and by_pointer:
                continue
            deps.append(t)
        return deps

    def ordered(self):
        done, out = set(), []

        def visit(d, path):
            if d.name in done:
                return
            if d.name in path:
                raise XdrError(f'{d.spec.path}:{d.line}: {d.name} contains itself')
            for dep in self.type_deps(d):
                visit(dep, path | {d.name})
            done.add(d.name)
            out.append(d)

        for d in self.s.defs:
            if d.what in ('struct', 'union', 'typedef'):
                visit(d, set())
        return out

    def c_definition(self, d):
        if d.what == 'typedef':
            return [f'typedef {self.cdecl(d.decl, d.name)};']
        out = [f'struct {d.name} {{']
        if d.what == 'struct':
            for f in d.fields:
                out.append(f'\t{self.cdecl(f, f"{d.name}.{f.name}")};')
        else:
            out.append(f'\t{self.cdecl(d.discr, "")};')
            arms = [a for _, a in d.arms] + ([d.default] if d.default else [])
            names = set()
            members = []
            for a in arms:
                if a.kind == 'void' or a.name in names:
                    continue
                if a.name == d.discr.name:
                    self.s.fail(d, f'arm {a.name} has the name of the discriminant')
                names.add(a.name)
                members.append(self.cdecl(a, f'{d.name}.{a.name}'))
            if len(members) == 1:
                out.append(f'\t{members[0]};')
            elif members:
                out.append('\tunion {')
                out += [f'\t\t{m};' for m in members]
                out.append('\t};')
        out.append('};')
        return out

    def check_union(self, d):
        r = self.s.resolve(d.discr.type)
        if d.discr.kind != 'one' or not (
                r in ('int', 'unsigned int', 'bool') or (not isinstance(r, str) and
                                                         r.what == 'enum')):
            self.s.fail(d, f'{d.name}: the discriminant must be an int, unsigned int, bool or enum')
        seen, arms = {}, {}
        for labels, arm in d.arms:
            for label in labels:
                v = self.s.num(label)
                if v in seen:
                    self.s.fail(d, f'{d.name}: case {label} twice')
                seen[v] = label
            if arm.kind != 'void':
                prev = arms.get(arm.name)
                if prev and (prev.type, prev.kind, prev.size) != (arm.type, arm.kind, arm.size):
                    self.s.fail(d, f'{d.name}: two arms named {arm.name}')
                arms[arm.name] = arm

    def label(self, text):
        return {'TRUE': 'true', 'FALSE': 'false'}.get(text, text)

    def functions(self, d):
        """The decoder and encoder of a definition, as lines."""
        s, p, ct = self.s, self.p, self.ctype_of(d)
        dec, enc = Fn(), Fn()
        if d.what == 'enum':
            values = []
            for name, _ in d.values:
                if s.num(name) not in [s.num(v) for v in values]:
                    values.append(name)
            if d.name in s.open:
                dec.emit(1, 'return xdr_dec_i32(x, v);')
                enc.emit(1, 'return xdr_enc_i32(x, *v);')
            else:
                dec.locals.add('e')
                dec.emit(1, 'if (xdr_dec_i32(x, &e))')
                dec.emit(2, 'return -EBADMSG;')
                dec.emit(1, 'switch (e) {')
                enc.emit(1, 'switch (*v) {')
                for name in values:
                    dec.emit(1, f'case {name}:')
                    enc.emit(1, f'case {name}:')
                dec.emit(2, '*v = e;')
                dec.emit(2, 'return 0;')
                dec.emit(1, '}')
                dec.emit(1, 'return -EBADMSG;')
                enc.emit(2, 'return xdr_enc_i32(x, *v);')
                enc.emit(1, '}')
                enc.emit(1, 'return -EINVAL;')
        elif d.what == 'typedef':
            self.dec_decl(dec, d.decl, '(*v)', d.name, 1)
            self.enc_decl(enc, d.decl, '(*v)', d.name, 1)
            dec.emit(1, 'return 0;')
            enc.emit(1, 'return 0;')
        elif d.what == 'struct' and s.is_list(d):
            # rule 5: the list is walked, not recursed into
            last = d.fields[-1]
            nxt = f'v->{cname(last.name)}'
            dec.locals.add('more')
            for fn in (dec, enc):
                fn.emit(1, 'for (;;) {')
            for f in d.fields[:-1]:
                self.dec_decl(dec, f, f'v->{cname(f.name)}', f'{d.name}.{f.name}', 2)
                self.enc_decl(enc, f, f'v->{cname(f.name)}', f'{d.name}.{f.name}', 2)
            dec.call(2, f'xdr_dec_more(x, {s.minwire(d.name)}, &more)')
            dec.emit(2, f'{nxt} = NULL;')
            dec.emit(2, 'if (!more)')
            dec.emit(3, 'return 0;')
            dec.emit(2, f'if (!({nxt} = xdr_dec_alloc(x, 1, sizeof(*{nxt}))))')
            dec.emit(3, 'return -E2BIG;')
            enc.call(2, f'xdr_enc_bool(x, {nxt} != NULL)')
            enc.emit(2, f'if (!{nxt})')
            enc.emit(3, 'return 0;')
            for fn in (dec, enc):
                fn.emit(2, f'v = {nxt};')
                fn.emit(1, '}')
        elif d.what == 'struct':
            for f in d.fields:
                self.dec_decl(dec, f, f'v->{cname(f.name)}', f'{d.name}.{f.name}', 1)
                self.enc_decl(enc, f, f'v->{cname(f.name)}', f'{d.name}.{f.name}', 1)
            dec.emit(1, 'return 0;')
            enc.emit(1, 'return 0;')
        else:
            self.check_union(d)
            disc = d.discr
            dv = f'v->{cname(disc.name)}'
            self.dec_value(dec, disc.type, dv, 1)
            self.enc_value(enc, disc.type, dv, 1)
            sw = f'(int){dv}' if s.resolve(disc.type) == 'bool' else dv
            for fn in (dec, enc):
                fn.emit(1, f'switch ({sw}) {{')
            for labels, arm in d.arms:
                for label in labels:
                    for fn in (dec, enc):
                        fn.emit(1, f'case {self.label(label)}:')
                key = f'{d.name}.{arm.name}'
                self.dec_decl(dec, arm, f'v->{cname(arm.name or "")}', key, 2)
                self.enc_decl(enc, arm, f'v->{cname(arm.name or "")}', key, 2)
                for fn in (dec, enc):
                    fn.emit(2, 'break;')
            for fn in (dec, enc):
                fn.emit(1, 'default:')
            if d.default is not None:
                key = f'{d.name}.{d.default.name}'
                self.dec_decl(dec, d.default, f'v->{cname(d.default.name or "")}', key, 2)
                self.enc_decl(enc, d.default, f'v->{cname(d.default.name or "")}', key, 2)
                for fn in (dec, enc):
                    fn.emit(2, 'break;')
            else:
                r = s.resolve(disc.type)
                is_open = not isinstance(r, str) and r.name in s.open
                dec.emit(2, 'return -ENOMSG;' if is_open else 'return -EBADMSG;')
                enc.emit(2, 'return -EINVAL;')
            for fn in (dec, enc):
                fn.emit(1, '}')
                fn.emit(1, 'return 0;')
        out = [f'int {p}_dec_{d.name}(struct xdr_dec *x, {ct} *v)', '{']
        out += dec.body() + ['}', '', f'int {p}_enc_{d.name}(struct xdr_enc *x, const {ct} *v)',
                             '{']
        out += enc.body() + ['}', '']
        return out

    # -- names and statuses --

    def distinct(self, d):
        """An enumeration's names, the first of each value (as its decoder)."""
        values, seen = [], set()
        for name, _ in d.values:
            if self.s.num(name) not in seen:
                seen.add(self.s.num(name))
                values.append(name)
        return values

    def name_function(self, d):
        """const char *T_name(int32_t v): the enumerator's name, NULL for a
        value the enumeration does not list."""
        out = [f'const char *{d.name}_name(int32_t v)', '{', '\tswitch (v) {']
        for name in self.distinct(d):
            out += [f'\tcase {name}:', f'\t\treturn "{name}";']
        return out + ['\t}', '\treturn NULL;', '}', '']

    def status_path(self, type_, enum):
        """The member path ('.a.b') from a value of type_ to its leading
        value of the enumeration (a struct's first member, a union's
        discriminant, recursively), or None."""
        r = self.s.resolve(type_)
        if isinstance(r, str):
            return None
        if r.what == 'enum':
            return '' if r.name == enum else None
        if r.what == 'struct' and r.fields and r.fields[0].kind == 'one':
            rest = self.status_path(r.fields[0].type, enum)
            return None if rest is None else f'.{cname(r.fields[0].name)}{rest}'
        if r.what == 'union':
            rest = self.status_path(r.discr.type, enum)
            return None if rest is None else f'.{cname(r.discr.name)}{rest}'
        return None

    def status_decls(self, d):
        enum = self.s.consts[self.s.status[d.name][0]].name
        return [f'{enum} {d.name}_status(const struct {d.name} *v);',
                f'int {d.name}_set_status(struct {d.name} *v, {enum} status);']

    def status_functions(self, d):
        """T_status(), T_set_status() of a union declared "status" in the
        bounds file: every arm starts with a value of one enumeration."""
        s = self.s
        fallback, where = s.status[d.name]
        enum = s.consts[fallback].name
        disc = f'v->{cname(d.discr.name)}'
        sw = f'(int){disc}' if s.resolve(d.discr.type) == 'bool' else disc
        get, put = [], []
        arms = [(labels, a) for labels, a in d.arms] + \
            ([(None, d.default)] if d.default is not None else [])
        for labels, arm in arms:
            path = None if arm.kind != 'one' else self.status_path(arm.type, enum)
            if path is None:
                raise XdrError(f'{where}: {d.name}.{arm.name or "void"} does not start with '
                               f'a {enum}')
            cases = [f'\tcase {self.label(x)}:' for x in labels] if labels else ['\tdefault:']
            get += cases + [f'\t\treturn v->{cname(arm.name)}{path};']
            put += cases + [f'\t\tv->{cname(arm.name)}{path} = status;', '\t\treturn 0;']
        if d.default is None:
            get += ['\tdefault:', f'\t\treturn {fallback};']
            put += ['\tdefault:', '\t\treturn -EINVAL;']
        decl = self.status_decls(d)
        return [decl[0][:-1], '{', f'\tswitch ({sw}) {{'] + get + ['\t}', '}', '',
                decl[1][:-1], '{', f'\tswitch ({sw}) {{'] + put + ['\t}', '}', '']

    # -- the two files --

    def named(self):
        return [d for d in self.s.defs if d.what in ('enum', 'struct', 'union', 'typedef')]

    def proc_types(self):
        """The argument and result types of the procedures, in order."""
        types = []
        for d in self.s.defs:
            if d.what == 'program':
                for _, _, procs in d.versions:
                    for _, _, arg, res in procs:
                        for t in (arg, res):
                            if t is not None and t not in types:
                                if t in PRIMS:
                                    self.s.fail(d, f'{t} as a procedure type: name it')
                                types.append(t)
        return types

    def generated_line(self, bounds):
        src = os.path.relpath(self.s.path, ROOT)
        bnd = f' and {os.path.relpath(bounds, ROOT)}' if bounds else ''
        return f'/* Generated by tools/xdrgen/xdrgen.py from {src}{bnd}: do not edit. */'

    def const_header(self, bounds):
        """S_const.h: the constants and enumerations with their names, and
        nothing of the codecs: what a layer that knows no XDR may include."""
        s, p = self.s, self.p
        guard = f'JNFS_XDR_{p.upper()}_CONST_H'
        out = [self.generated_line(bounds), '/*',
               f' * xdr/{p}_const.h - the constants and enumerations of '
               f'{os.path.basename(s.path)}', ' * and the names of their values; the codecs '
               f'are in xdr/{p}.h.', ' */',
               f'#ifndef {guard}', f'#define {guard}', '', '#include <stdint.h>']
        out += [f'#include "xdr/{o.stem}_const.h"' for o in s.imported]
        out += ['', '/* ---- constants ---- */', '']
        for d in s.defs:
            if d.what == 'const':
                v = d.value
                out.append(f'#define {d.name} {"(" + v + ")" if v.startswith("-") else v}')
        out += ['', '/* ---- enumerations (stored as int32_t) ---- */', '']
        for d in s.defs:
            if d.what == 'enum':
                out.append(f'enum {d.name} {{')
                out += [f'\t{n} = {s.num(v)},' for n, v in d.values]
                out += ['};', f'typedef int32_t {d.name};', '']
        out += ['/* The name of a value ("NFS4ERR_DELAY"), NULL for one the enumeration',
                ' * does not list; of values with two names, the first. */']
        out += [f'const char *{d.name}_name(int32_t v);' for d in s.defs if d.what == 'enum']
        out += ['', '#endif']
        return '\n'.join(out) + '\n'

    def header(self, bounds):
        s, p = self.s, self.p
        guard = f'JNFS_XDR_{p.upper()}_H'
        out = [self.generated_line(bounds), '/*',
               f' * xdr/{p}.h - the types of {os.path.basename(s.path)} and their codecs, which',
               ' * keep the rules of docs/xdr.md (bounded counts, no allocation but from',
               ' * the stream\'s arena, opaque data pointing into the receive buffer).', ' */',
               f'#ifndef {guard}', f'#define {guard}', '', '#include <stdbool.h>',
               '#include <stdint.h>', '', '#include "rpc/xdr.h"']
        out += [f'#include "xdr/{o.stem}.h"' for o in s.imported]
        out += [f'#include "xdr/{p}_const.h"', '']
        out += ['/* ---- types ---- */', '']
        out += [f'struct {d.name};' for d in s.defs if d.what in ('struct', 'union')]
        out.append('')
        for d in self.ordered():
            out += self.c_definition(d) + ['']
        out += ['/* ---- programs ---- */', '']
        for d in s.defs:
            if d.what == 'program':
                out.append(f'#define {d.name} {d.number}')
                for vname, vnum, procs in d.versions:
                    out.append(f'#define {vname} {vnum}')
                    out += [f'#define {pname} {pnum}' for pname, pnum, _, _ in procs]
                out.append('')
        if s.limits:
            out += [f'/* ---- limits configured in {os.path.basename(bounds)} ---- */', '']
            for key, (v, _) in s.limits.items():
                out.append(f'#define {p.upper()}_LIMIT_{key.replace(".", "_")} {v}')
            out.append('')
        out += ['/* ---- codecs (docs/xdr.md) ---- */', '']
        for d in self.named():
            ct = self.ctype_of(d)
            out.append(f'int {p}_dec_{d.name}(struct xdr_dec *x, {ct} *v);')
            out.append(f'int {p}_enc_{d.name}(struct xdr_enc *x, const {ct} *v);')
        unions = [d for d in s.defs if d.name in s.status]
        if unions:
            out += ['', '/* The status every arm of these unions starts with (bounds file',
                    ' * "status"): T_status() reads it (for a discriminant without an arm,',
                    ' * the value the bounds file names); T_set_status() writes it, or is',
                    ' * -EINVAL for a discriminant without an arm. */']
            for d in unions:
                out += self.status_decls(d)
        out += ['', '/* Procedure arguments and results with the signatures of svc_proc rows',
                ' * (rpc/svc.h) and rpc_clnt_call() (rpc/clnt.h). */']
        for t in self.proc_types():
            out.append(f'int {p}_rpc_dec_{t}(struct xdr_dec *x, void *v);')
            out.append(f'int {p}_rpc_enc_{t}(struct xdr_enc *x, const void *v);')
        out += ['', '/* Every type above, in the order of the description. */',
                f'extern const struct xdr_type {p}_xdr_types[];',
                f'extern const unsigned {p}_xdr_ntypes;', '', '#endif']
        return '\n'.join(out) + '\n'

    def source(self, bounds):
        s, p = self.s, self.p
        out = [self.generated_line(bounds), '#include <errno.h>', '#include <string.h>', '',
               f'#include "xdr/{p}.h"', '']
        for d in self.named():
            out += self.functions(d)
        for d in s.defs:
            if d.what == 'enum':
                out += self.name_function(d)
            elif d.name in s.status:
                out += self.status_functions(d)
        for t in self.proc_types():
            out += [f'int {p}_rpc_dec_{t}(struct xdr_dec *x, void *v)', '{',
                    f'\treturn {self.fname(t)}_dec_{t}(x, v);', '}', '',
                    f'int {p}_rpc_enc_{t}(struct xdr_enc *x, const void *v)', '{',
                    f'\treturn {self.fname(t)}_enc_{t}(x, v);', '}', '']
        rows = []
        for d in self.named():
            out += [f'static int tdec_{d.name}(struct xdr_dec *x, void *v)', '{',
                    f'\treturn {p}_dec_{d.name}(x, v);', '}', '',
                    f'static int tenc_{d.name}(struct xdr_enc *x, const void *v)', '{',
                    f'\treturn {p}_enc_{d.name}(x, v);', '}', '']
            rows.append(f'\t{{"{d.name}", sizeof({self.ctype_of(d)}), tdec_{d.name}, '
                        f'tenc_{d.name}}},')
        out += [f'const struct xdr_type {p}_xdr_types[] = {{'] + rows + ['};', '',
                f'const unsigned {p}_xdr_ntypes = {len(rows)};']
        return '\n'.join(out) + '\n'


def load(path, imports, bounds):
    spec = Spec(path, imports, bounds)
    spec.check_names()
    spec.check_recursion()
    return spec


def main():
    ap = argparse.ArgumentParser(description='C codecs from an XDR description')
    ap.add_argument('spec')
    ap.add_argument('--bounds', help='limits, open enumerations, spliced opaques')
    ap.add_argument('--import', dest='imports', action='append', default=[],
                    help='a description whose types this one uses (generated separately)')
    ap.add_argument('--out-dir', required=True)
    args = ap.parse_args()
    try:
        spec = load(args.spec, args.imports, args.bounds)
        gen = Gen(spec)
        header, source = gen.header(args.bounds), gen.source(args.bounds)
        const = gen.const_header(args.bounds)
        spec.check_keys()
    except (XdrError, OSError) as e:
        sys.exit(f'xdrgen: {e}')
    os.makedirs(args.out_dir, exist_ok=True)
    for name, text in (('.h', header), ('.c', source), ('_const.h', const)):
        path = os.path.join(args.out_dir, f'{spec.stem}{name}')
        with open(path + '.tmp', 'w') as f:
            f.write(text)
        os.replace(path + '.tmp', path)


if __name__ == '__main__':
    main()
