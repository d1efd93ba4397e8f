#!/usr/bin/env python3
"""The code-health figures of issue 49, for a checkout: public engine operations that return a
tuple, catch blocks whose body throws (per module), `reporting` in the CLI, `[String: Any]` per
module, and lines per module (Sources/, *.swift, comments included). Text matching, not a
parser: compare two checkouts with the same script, not with other counts.

    scripts/code-figures.py .            # this checkout
    git worktree add /tmp/old REV && scripts/code-figures.py /tmp/old
"""
import os, re, sys, collections
root = sys.argv[1]
src = os.path.join(root, 'Sources')
def files(d, ext='.swift'):
    for dp, dn, fn in os.walk(d):
        for f in fn:
            if f.endswith(ext): yield os.path.join(dp, f)
def strip_comments(t):
    t = re.sub(r'/\*.*?\*/', '', t, flags=re.S)
    return '\n'.join(l.split('//')[0] if not l.strip().startswith('"') else l for l in t.split('\n'))
# 1 public tuple-returning operations on CustodyEngine (extensions of CustodyEngine in Sources/Custody)
tuple_ops = []
catch_rethrow = collections.Counter()
reporting = 0
anydict = collections.Counter()
lines = collections.Counter()
for f in files(src):
    mod = os.path.relpath(f, src).split(os.sep)[0]
    text = open(f, encoding='utf-8', errors='replace').read()
    lines[mod] += text.count('\n')
    code = strip_comments(text)
    if mod == 'Custody' and ('extension CustodyEngine' in code or 'class CustodyEngine' in code):
        for m in re.finditer(r'public func (\w+)[^{]*?->\s*\(', code):
            tuple_ops.append(m.group(1))
    # catch blocks whose body throws
    for m in re.finditer(r'\bcatch\b[^{]*\{', code):
        i = m.end(); depth = 1; j = i
        while j < len(code) and depth:
            if code[j] == '{': depth += 1
            elif code[j] == '}': depth -= 1
            j += 1
        body = code[i:j]
        if re.search(r'\bthrow\b', body): catch_rethrow[mod] += 1
    if mod == 'custody': reporting += len(re.findall(r'\breporting\b', code))
    anydict[mod] += code.count('[String: Any]')
print('tuple-returning public engine ops:', len(tuple_ops), sorted(set(tuple_ops)))
print('catch blocks that throw:', sum(catch_rethrow.values()), dict(catch_rethrow))
print('reporting in custody CLI:', reporting)
print('[String: Any] by module:', {k:v for k,v in anydict.items() if v})
print('lines per module:', dict(sorted(lines.items())), 'total', sum(lines.values()))
