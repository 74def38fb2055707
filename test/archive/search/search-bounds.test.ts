/**
 * A search's bounds (archive/read/search.ts): it reads the index a stretch
 * of row ids at a time, newest first, so hidden mementos never take the
 * place of shown ones, and it stops at its shown hits, its rows read or its
 * time, saying so (`capped`, `cut`; the page says the time ran out). The
 * limits are made small here over a real index: eight hidden captures
 * newer than three shown ones.
 */
import t from 'tap';
import { captureRecord, putCapture, request, startArchive, type TestArchive } from '../../helpers/archive.js';
import { until } from '../../helpers/until.js';
import { SEARCH_MS, type SearchLimits, VisibleSearch } from '../../../archive/read/search.js';
import { parseTextQuery } from '../../../archive/search/query.js';
import { json, RULES } from './helpers.js';

const page = (title: string) => `<!doctype html><html><head><title>${title}</title></head><body><p>the quagga grazed here</p></body></html>`;

/** Three shown pages (January 2025), then eight excluded ones (February 2025): the hidden rows have the higher row ids. */
async function load(a: TestArchive): Promise<void> {
  const put = async (target: string, date: string) => {
    const r = await putCapture(a, '', captureRecord({ target, date, body: page(target), responseHeaders: [['Content-Type', 'text/html']] }));
    if (r.status !== 201) throw new Error(`${target}: ${r.status} ${r.text}`);
  };
  for (let i = 1; i <= 3; i++) await put(`/shown/${i}`, `Mon, 0${i} Jan 2025 10:00:00 GMT`);
  for (let i = 1; i <= 8; i++) await put(`/excluded/${i}`, `Sat, 0${i} Feb 2025 10:00:00 GMT`);
  await until(async () => (await a.app.textIndexer.drained(), (await a.store.index.text!.count()) >= 11), 20_000, 'the texts are indexed');
}

/** A search of "quagga" with `limits` over the archive's index and rules. */
function search(a: TestArchive, limits: Partial<SearchLimits>) {
  const all: SearchLimits = { rows: 100, examined: 100, ms: 60_000, statementRows: 2, firstWindow: 2, ...limits };
  const s = new VisibleSearch(a.store.index, (urlkey, datetime) => a.app.visible.shows(urlkey, datetime), all);
  return s.search({ terms: parseTextQuery('quagga'), page: 1 });
}

const shownPaths = (hits: { uri_r: string }[]) => hits.map((h) => new URL(h.uri_r).pathname);

t.test('hidden rows never take the place of shown ones; each bound stops the read and says which', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  await load(a);

  const whole = await search(a, { rows: 3 });
  t.same(shownPaths(whole.hits), ['/shown/3', '/shown/2', '/shown/1'], 'the three shown pages, past the eight newer hidden ones, two rows a statement');
  t.equal(whole.total, 3);
  t.equal(whole.capped, false, 'exactly as many shown as the bound: every row was read');
  t.equal(whole.cut, null);

  const rows = await search(a, { rows: 2 });
  t.same(shownPaths(rows.hits), ['/shown/3', '/shown/2']);
  t.equal(rows.total, 2);
  t.same([rows.capped, rows.cut], [true, 'rows'], 'a third shown hit is past the bound');

  const examined = await search(a, { examined: 6 });
  t.equal(examined.total, 0, 'six rows read, all hidden');
  t.same([examined.capped, examined.cut], [true, 'rows']);

  const time = await search(a, { ms: 0 });
  t.same([time.capped, time.cut], [true, 'time'], 'no time left after the first statement');
  t.ok(time.total < 3, 'the first statement (two row ids) cannot reach the shown pages');

  const wide = await search(a, { statementRows: 1000, firstWindow: 20_000 });
  t.same([wide.total, wide.cut], [3, null], 'the daemon’s statement sizes: one statement reads them all');
});

t.test('the daemon: JSON says cut, the page says the time ran out', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  await load(a);

  const r = await json(a, '/search?q=quagga&output=json');
  t.equal(r.status, 200);
  t.same([r.body.total, r.body.capped, r.body.cut], [3, false, null], 'the three shown pages; the hidden ones are no hits and cut nothing');

  // The same daemon with a search that has no time: the first statement runs, then it stops.
  const visible = a.app.visible as unknown as { search: VisibleSearch };
  visible.search = new VisibleSearch(a.store.index, (urlkey, datetime) => a.app.visible.shows(urlkey, datetime), {
    rows: 100,
    examined: 100,
    ms: 0,
    statementRows: 2,
    firstWindow: 2,
  });
  const cut = await json(a, '/search?q=quagga&output=json');
  t.same([cut.body.capped, cut.body.cut], [true, 'time']);
  const html = await request(`${a.url}/search?q=quagga`, { headers: { accept: 'text/html' } });
  t.equal(html.status, 200);
  t.match(html.text, `The search stopped after ${SEARCH_MS / 1000} s, before the oldest mementos`);
  t.match(html.text, /or more/, 'the count says there may be more');
});
