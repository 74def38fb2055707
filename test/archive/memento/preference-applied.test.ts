import t from 'tap';
import { decidePreferenceApplied, predictPreferenceApplied } from '../../../archive/memento/preference-applied.js';
import { parsePrefer } from '../../../archive/memento/prefer.js';
import { BASE, PAGE, reader, row, stored, TARGET, URI_R } from './helpers.js';

const ALL = 'original-content, original-links, echo-original-headers';
const M = (url: string, modifier = '') => `${BASE}/2001/memento/20010320203500${modifier}/${url}`;
const none = { content: false, links: false };
const echo = parsePrefer('echo-original-headers');

t.test('decidePreferenceApplied: a Refresh naming a URL is rewritten in the replay form only, and then the links are not the original ones', async (t) => {
  const head = { status: 200, refresh: '5; url=/next' };
  const replay = decidePreferenceApplied(echo, 'replay', none, head, TARGET, URI_R);
  t.same(replay, {
    preferenceApplied: 'original-content, echo-original-headers',
    changes: { content: false, links: true },
    location: undefined,
    refresh: `5; url=${M('http://a.example.org/next')}`,
  });
  for (const form of ['links', 'raw'] as const) {
    const out = decidePreferenceApplied(echo, form, none, head, TARGET, URI_R);
    t.same([out.preferenceApplied, out.refresh], [ALL, undefined], `${form}: no Refresh sent, nothing changed`);
  }
  const noUrl = decidePreferenceApplied(echo, 'replay', none, { status: 200, refresh: '5' }, TARGET, URI_R);
  t.same([noUrl.preferenceApplied, noUrl.refresh], [ALL, undefined], 'a Refresh without a URL: not sent, nothing changed');
});

t.test("decidePreferenceApplied: a 3xx's Location goes into the archive in every form, in that form", async (t) => {
  for (const [form, modifier] of [
    ['replay', ''],
    ['links', 'ol_'],
    ['raw', 'id_'],
  ] as const) {
    const out = decidePreferenceApplied(parsePrefer('raw'), form, none, { status: 301, location: '/y' }, TARGET, URI_R);
    t.equal(out.location, M('http://a.example.org/y', modifier), form);
    t.same(out.changes, { content: false, links: true }, form);
    t.equal(out.preferenceApplied, `original-content, echo-original-headers${form === 'raw' ? ', raw' : ''}`, form);
  }
  const ok = decidePreferenceApplied(echo, 'replay', none, { status: 200, location: '/y' }, TARGET, URI_R);
  t.same([ok.location, ok.preferenceApplied], [undefined, ALL], 'a Location of a 200 is not sent');
});

t.test("predictPreferenceApplied: what the URI-M of each form will say (a TimeGate's Preference-Applied)", async (t) => {
  const html = () => stored(200, [['Content-Type', 'text/html']], PAGE);
  const p = parsePrefer('original-content');
  t.same((await predictPreferenceApplied(row('text/html'), p, 'raw', reader(html).read, TARGET)).changes, none, 'raw');
  t.same(
    (await predictPreferenceApplied(row('text/html'), p, 'links', reader(html).read, TARGET)).changes,
    { content: true, links: false },
    'links: a base element',
  );
  t.same(
    (await predictPreferenceApplied(row('text/html'), p, 'replay', reader(html).read, TARGET)).changes,
    { content: true, links: true },
    'replay: the script goes in',
  );
  const redirect = () => stored(301, [['Location', '/y']], '');
  for (const form of ['replay', 'links', 'raw'] as const)
    t.same(
      (await predictPreferenceApplied(row('text/plain', 301), p, form, reader(redirect).read, TARGET)).changes,
      { content: false, links: true },
      `${form} form of a 3xx: its Location`,
    );
  const image = () =>
    stored(
      200,
      [
        ['Content-Type', 'image/png'],
        ['Refresh', '5; url=/next'],
      ],
      Buffer.from([0x89, 0x50, 0x4e, 0x47]),
    );
  t.equal(
    (await predictPreferenceApplied(row('image/png'), echo, 'replay', reader(image).read, TARGET)).preferenceApplied,
    'original-content, echo-original-headers',
    'an image with a Refresh',
  );
  const { read, reads } = reader(html);
  await predictPreferenceApplied(row('text/html'), echo, 'replay', read, TARGET);
  t.same(
    reads.map((r) => r.closed),
    [1],
    'the record read is closed',
  );
  const raw = reader(html);
  t.equal((await predictPreferenceApplied(row('text/html'), p, 'raw', raw.read, TARGET)).preferenceApplied, ALL, 'the raw form of a 200');
  t.equal(raw.reads.length, 0, 'is not read');
  t.equal((await predictPreferenceApplied(undefined, p, 'raw', raw.read, TARGET)).preferenceApplied, ALL, 'a memento gone since it was chosen: unchanged');
});
