import t from 'tap';
import { formOfModifier } from '../../archive/memento/prefer.js';
import { buildUriM, parseUriM, parseUriMTimestamp, uriMPath } from '#shared/uri-m.js';

const BASE = 'http://arxiv.example.net/prefix';
const MODIFIERS = ['', 'id_', 'ol_', 'im_', 'js_', 'cs_', 'oe_', 'if_', 'fw_'];

t.test('buildUriM: {base}/{archive}/memento/{timestamp}{modifier}/{URI-R}, the URI-R as it is', async (t) => {
  t.equal(
    buildUriM(BASE, { archive: '2001', timestamp: '20010320203500', modifier: 'id_', uriR: 'http://a.example.org/x?y=1#f' }),
    `${BASE}/2001/memento/20010320203500id_/http://a.example.org/x?y=1#f`,
  );
  t.equal(buildUriM('', { archive: 'a', timestamp: '2001', modifier: '', uriR: 'https://b/' }), '/a/memento/2001/https://b/', 'from the root');
  t.equal(
    uriMPath({ archive: 'a', timestamp: '20010320203500', modifier: '', uriR: 'http://b/' }),
    'a/memento/20010320203500/http://b/',
    'the path under the base',
  );
});

t.test('parseUriM ∘ buildUriM: the round trip, for every modifier and 1–14 digit timestamps', async (t) => {
  for (const modifier of MODIFIERS)
    for (const timestamp of ['2', '2001', '20010320', '20010320203500'])
      for (const uriR of ['http://a.example.org/', 'https://a.example.org:8443/x/memento/20010320203500/y?q=1', 'http://a.example.org/%20?x=/memento/1/']) {
        const parts = { archive: 'my-archive.1', timestamp, modifier, uriR };
        t.same(parseUriM(buildUriM(BASE, parts)), { ...parts, base: BASE }, `${timestamp}${modifier} ${uriR}`);
        t.same(parseUriM('/' + uriMPath(parts)), { ...parts, base: '' }, 'a path from the root');
        t.same(parseUriMTimestamp(`${timestamp}${modifier}`), { timestamp, modifier }, `segment ${timestamp}${modifier}`);
      }
});

t.test('parseUriM: what is not a URI-M', async (t) => {
  for (const uri of [
    `${BASE}/2001/timegate/http://a.example.org/`,
    `${BASE}/2001/memento/http://a.example.org/`,
    `${BASE}/2001/memento/200103202035001/http://a.example.org/`,
    `${BASE}/2001/memento/2001ID_/http://a.example.org/`,
    `${BASE}/2001/memento/2001id/http://a.example.org/`,
    `${BASE}/2001/MEMENTO/2001/http://a.example.org/`,
    `${BASE}//memento/2001/http://a.example.org/`,
  ])
    t.equal(parseUriM(uri), undefined, uri);
  t.equal(parseUriM(`${BASE}/2001/memento/2001xy_/http://a/`)?.modifier, 'xy_', 'any modifier of that shape: the caller asks which form it names');
  t.equal(formOfModifier('xy_'), undefined);
});

t.test('parseUriMTimestamp: 1–14 digits and an optional modifier of that shape', async (t) => {
  for (const segment of ['', 'id_', '123456789012345', '2001ID_', '2001id', '2001_', '2001id_x', ' 2001', '2001-03-20'])
    t.equal(parseUriMTimestamp(segment), undefined, JSON.stringify(segment));
  for (const modifier of MODIFIERS) t.ok(formOfModifier(parseUriMTimestamp(`2001${modifier}`)!.modifier), `${modifier || "''"} names a form`);
});
