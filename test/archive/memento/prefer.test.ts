import t from 'tap';
import type { BodyChanges } from '../../../archive/replay/cache.js';
import {
  DIMENSIONS,
  type Dimension,
  FORM_MODIFIERS,
  formFor,
  formOfModifier,
  hasPreference,
  type MementoForm,
  parsePrefer,
  preferenceApplied,
  satisfied,
} from '../../../archive/memento/prefer.js';

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

t.test('formFor: original-content (or raw) → raw; else original-links → links; else the form the address names; an id_ address stays raw', async (t) => {
  const cases: [string | undefined, MementoForm, MementoForm][] = [
    [undefined, 'replay', 'replay'],
    [undefined, 'links', 'links'],
    [undefined, 'raw', 'raw'],
    ['original-content', 'replay', 'raw'],
    ['original-content, original-links', 'replay', 'raw'],
    ['raw', 'links', 'raw'],
    ['original-links', 'replay', 'links'],
    ['original-links, echo-original-headers', 'replay', 'links'],
    ['original-links', 'raw', 'raw'],
    ['echo-original-headers', 'replay', 'replay'],
    ['echo-original-headers', 'links', 'links'],
    ['rewritten', 'links', 'replay'],
    ['rewritten', 'raw', 'raw'],
    ['respond-async', 'links', 'links'],
  ];
  for (const [header, address, want] of cases) t.equal(formFor(parsePrefer(header), address), want, `${header} at a ${address} address`);
});

t.test(
  'form modifiers: one URI-M per form (no modifier replay, ol_ links, id_ raw); the context modifiers name the replay; others are not forms',
  async (t) => {
    t.same(FORM_MODIFIERS, { replay: '', links: 'ol_', raw: 'id_' });
    t.equal(formOfModifier(''), 'replay');
    t.equal(formOfModifier('ol_'), 'links');
    t.equal(formOfModifier('id_'), 'raw');
    for (const m of ['im_', 'js_', 'cs_', 'oe_', 'if_', 'fw_']) t.equal(formOfModifier(m), 'replay', `${m}: a context modifier of the replay`);
    for (const m of ['ID_', 'id', 'zz_']) t.equal(formOfModifier(m), undefined, m);
  },
);

t.test('satisfied (spec Prefer rule 3): what each form satisfies for what it changed', async (t) => {
  const none = { content: false, links: false };
  const content = { content: true, links: false };
  const both = { content: true, links: true };
  t.same(satisfied('raw', none), ALL, 'raw');
  t.same(satisfied('raw', { content: false, links: true }), ['original-content', 'echo-original-headers'], 'raw of a 3xx: its Location goes into the archive');
  t.same(satisfied('raw', both), ['original-content', 'echo-original-headers'], 'raw: always the stored bytes');
  t.same(satisfied('links', none), ALL, 'links form, nothing inserted');
  t.same(satisfied('links', content), ['original-links', 'echo-original-headers'], 'links form with a base element');
  t.same(satisfied('replay', none), ALL, 'replay of something without URLs (an image)');
  t.same(satisfied('replay', both), ['echo-original-headers'], 'replay with URLs rewritten');
  t.same(satisfied('replay', { content: false, links: true }), ['original-content', 'echo-original-headers'], 'a 3xx with its Location rewritten');
});

t.test('preferenceApplied (spec Prefer rules 3, 4, 6): what the response satisfies, plus raw/rewritten when asked and applied', async (t) => {
  const none = { content: false, links: false };
  const base = { content: true, links: false };
  const rewritten = { content: true, links: true };
  const cases: [string | undefined, MementoForm, BodyChanges, string][] = [
    ['raw', 'raw', none, 'original-content, original-links, echo-original-headers, raw'],
    ['raw', 'links', base, 'original-links, echo-original-headers'],
    ['rewritten', 'replay', rewritten, 'echo-original-headers, rewritten'],
    ['rewritten', 'replay', none, 'original-content, original-links, echo-original-headers, rewritten'],
    ['rewritten', 'raw', none, 'original-content, original-links, echo-original-headers'],
    ['original-content', 'raw', none, 'original-content, original-links, echo-original-headers'],
    ['original-links', 'links', base, 'original-links, echo-original-headers'],
    ['original-links', 'links', none, 'original-content, original-links, echo-original-headers'],
    ['echo-original-headers', 'replay', rewritten, 'echo-original-headers'],
    [undefined, 'replay', rewritten, 'echo-original-headers'],
    [undefined, 'replay', none, 'original-content, original-links, echo-original-headers'],
  ];
  for (const [header, form, changes, want] of cases)
    t.equal(preferenceApplied(parsePrefer(header), form, changes), want, `${header} form=${form} ${JSON.stringify(changes)}`);
});
