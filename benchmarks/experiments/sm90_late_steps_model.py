"""A model of sm90_late_gelu_steps.patch's schedule (the kernel's hook, flush and end, in the same order): every
packed register is transformed exactly once, before any slice store that reads it, for each tile width (256, 240,
192), k-block count (0-39), tile count and last-tile store; every slice of every tile is stored.

    python benchmarks/experiments/sm90_late_steps_model.py
"""
def run(bn, K, tiles, last_fresh=True):
    pk = bn // 4; L = pk // 4; S = (bn + 63) // 64
    first = lambda s: s * 64 if s * 64 + 64 <= bn else bn - 64
    need = lambda s: (first(s) // 4 + 16 + 3) // 4
    st = dict(steps=L, nxt=S, xf=None, stored=0)
    def step():
        t = st['steps']; assert t < L
        for r in range(4 * t, 4 * t + 4):
            assert st['xf'][r] == 0, 'twice'; st['xf'][r] = 1
        st['steps'] += 1
    def store():
        s = st['nxt']
        while st['steps'] < need(s): step()
        for r in range(first(s) // 4, first(s) // 4 + 16): assert st['xf'][r] == 1, ('untransformed', bn, K, s, r)
        st['nxt'] += 1; st['stored'] += 1
    for t in range(tiles):
        for kb in range(min(L, K)):  # the hooked k-blocks
            if st['steps'] < L: step()
            if st['nxt'] < S and st['steps'] >= need(st['nxt']): store()
        while st['nxt'] < S: store()  # flush after the mainloop
        st['nxt'] = 0; st['steps'] = 0; st['xf'] = [0] * pk  # the pack: a new pending tile
    while st['steps'] < L: step()  # the kernel's end
    if last_fresh:
        assert all(st['xf']); st['stored'] += S
    else:
        while st['nxt'] < S: store()
    assert st['stored'] == tiles * S, (st['stored'], tiles * S)
    assert L == max(need(s) for s in range(S)), 'the last slice needs every step'
n = 0
for bn in (256, 240, 192):
    for K in range(0, 40):
        for tiles in range(1, 5):
            for lf in (True, False):
                run(bn, K, tiles, lf); n += 1
print('ok', n, 'cases')
