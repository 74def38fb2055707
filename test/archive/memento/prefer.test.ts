import t from 'tap';
import { DIMENSIONS, type Dimension, hasPreference, parsePrefer, preferenceApplied, satisfied } from '../../../archive/memento/prefer.js';

/** The parse result as plain values: dimensions in DIMENSIONS order, the pywb tokens, hasPreference. */
function shown(header: string | string[] | undefined) {
  const p = parsePrefer(header);
  return { dims: DIMENSIONS.filter((d) => p.dims.has(d)), raw: p.raw, rewritten: p.rewritten, has: hasPreference(p) };
}

const ALL: Dimension[] = ['original-content', 'original-links', 'echo-original-headers'];

t.test('RFC 7240 §2: comma-separated preferences, case-insensitive, parameters and values ignored', async (t) => {
  const cases: [string, Dimension[]][] = [
    ['original-content', ['original-content']],
    ['original-content, original-links', ['original-content', 'original-links']],
    ['original-content,original-links,echo-original-headers', ALL],
    ['Original-Content, ORIGINAL-LINKS', ['original-content', 'original-links']],
    ['original-content; foo=bar', ['original-content']],
    ['original-links=1;x;y="z"', ['original-links']],
    [' original-content , ', ['original-content']],
    ['original-content, original-content', ['original-content']],
  ];
  for (const [header, dims] of cases) t.same(shown(header), { dims, raw: false, rewritten: false, has: true }, header);
});

t.test('RFC 7240 §2: repeated Prefer headers are one list', async (t) => {
  t.same(shown(['original-content', 'echo-original-headers']).dims, ['original-content', 'echo-original-headers']);
  t.same(shown(['respond-async', 'Original-Links; x=1']).dims, ['original-links']);
  t.same(shown(['', 'raw']).raw, true, 'an empty header among them');
});

t.test('RFC 7240 §2: preferences the server does not understand are ignored (spec Prefer rule 7)', async (t) => {
  for (const header of [
    undefined,
    '',
    'respond-async, wait=10',
    'return=minimal',
    'handling=lenient',
    '"original-content"',
    'original-content original-links',
    'original',
  ]) {
    t.same(shown(header), { dims: [], raw: false, rewritten: false, has: false }, JSON.stringify(header));
  }
  t.same(shown('respond-async, original-content, wait=10').dims, ['original-content'], 'known among unknown');
});

t.test("pywb's tokens: raw asks for all three dimensions; rewritten asks for the default Memento", async (t) => {
  t.same(shown('raw'), { dims: ALL, raw: true, rewritten: false, has: true });
  t.same(shown('RAW; x=1'), { dims: ALL, raw: true, rewritten: false, has: true });
  t.same(shown('rewritten'), { dims: [], raw: false, rewritten: true, has: true });
  t.same(shown('rewritten, original-links'), { dims: ['original-links'], raw: false, rewritten: true, has: true });
});

t.test('RFC 7240 §2: a comma inside a quoted-string value does not separate preferences', async (t) => {
  t.same(shown('foo="a,raw,b"'), { dims: [], raw: false, rewritten: false, has: false }, 'foo="a,raw,b"');
  t.same(shown('original-links; x="a,original-content,b"').dims, ['original-links'], 'a quoted parameter value');
});

t.test('satisfied (spec Prefer rule 3): the raw variant and an unchanged body satisfy all three; a changed body keeps links and headers', async (t) => {
  t.same(satisfied(true, true), ALL, 'raw');
  t.same(satisfied(true, false), ALL, 'raw, body unchanged');
  t.same(satisfied(false, false), ALL, 'default Memento, body as stored');
  t.same(satisfied(false, true), ['original-links', 'echo-original-headers'], 'default Memento with a base element or decoded');
});

t.test('preferenceApplied (spec Prefer rules 3, 4, 6): what the response satisfies, plus raw/rewritten when asked and applied', async (t) => {
  const cases: [string | undefined, boolean, boolean, string][] = [
    ['raw', true, true, 'original-content, original-links, echo-original-headers, raw'],
    ['raw', false, true, 'original-links, echo-original-headers'],
    ['rewritten', false, true, 'original-links, echo-original-headers, rewritten'],
    ['rewritten', false, false, 'original-content, original-links, echo-original-headers, rewritten'],
    ['rewritten', true, false, 'original-content, original-links, echo-original-headers'],
    ['original-content', true, false, 'original-content, original-links, echo-original-headers'],
    ['original-content', false, true, 'original-links, echo-original-headers'],
    ['echo-original-headers', false, true, 'original-links, echo-original-headers'],
    [undefined, false, true, 'original-links, echo-original-headers'],
    [undefined, false, false, 'original-content, original-links, echo-original-headers'],
  ];
  for (const [header, raw, changed, want] of cases)
    t.equal(preferenceApplied(parsePrefer(header), raw, changed), want, `${header} raw=${raw} bodyChanged=${changed}`);
});
