/**
 * The reader's time at a Memento address (archive/http/memento.ts): at
 * `<T>if_` (the banner page's frame) a 14-digit T that is not stored
 * serves the nearest memento's archival replay itself, its URLs rewritten
 * at T, with that memento's Memento-Datetime and Content-Location; the
 * nearest in another archive is a 302 that keeps T; every other modifier,
 * a timestamp prefix and a Prefer for a stored form keep the 302 to the
 * nearest URI-M; 404 and 451 as at any Memento address.
 */
import t from 'tap';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../../helpers/archive.js';

const SITE = 'http://www.example.org';
const PAGE = `${SITE}/page.html`;
const CSS = `${SITE}/style.css`;
const BLOCKED = `${SITE}/blocked.html`;
const PAGE_HTML = '<html><head><link rel="stylesheet" href="/style.css"></head><body><img src="/logo.png"><a href="/next.html">next</a></body></html>';

const a = await startArchive(`${TWO_ARCHIVES}access:
  - url: ${BLOCKED}
    action: block
`);
t.teardown(() => a.close());

async function put(uriR: string, date: string, body: string, type = 'text/html; charset=utf-8'): Promise<void> {
  const r = await putCapture(
    a,
    uriR,
    captureRecord({ host: 'www.example.org', target: new URL(uriR).pathname, date, body, responseHeaders: [['Content-Type', type]] }),
  );
  if (r.status !== 201) throw new Error(`PUT ${uriR}: ${r.status} ${r.text}`);
}
await put(PAGE, 'Sun, 01 Jun 2025 00:00:00 GMT', PAGE_HTML);
await put(PAGE, 'Sun, 01 Feb 2026 00:00:00 GMT', PAGE_HTML.replace('next', 'later'));
await put(CSS, 'Sun, 01 Jun 2025 00:00:00 GMT', 'body { color: red }', 'text/css');
await put(CSS, 'Tue, 10 Jun 2025 00:00:00 GMT', 'body { color: blue }', 'text/css');
await put(BLOCKED, 'Sun, 01 Jun 2025 00:00:00 GMT', '<p>withheld</p>');

const own = `${a.url}/2025/memento/20250601000000/${PAGE}`;
const atT = `${a.url}/2025/memento/20250615000000if_/${PAGE}`;
const noDate = (h: Record<string, unknown>) => ({ ...h, date: 0 });

t.test('<T>if_ at an unstored T: the nearest memento, its URLs rewritten at T, its own Memento-Datetime and Content-Location', async (t) => {
  // Three times in turn: the kept answer and the replay cache hold each rewrite time apart.
  for (let round = 0; round < 3; round++) {
    const plain = await request(own);
    const res = await request(atT);
    t.equal(res.status, 200, `round ${round}`);
    t.equal(res.headers['memento-datetime'], 'Sun, 01 Jun 2025 00:00:00 GMT', 'the Memento-Datetime of the memento served');
    t.equal(res.headers['content-location'], own, 'Content-Location: its own URI-M, the plain archival replay');
    t.same(noDate(res.headers), noDate(plain.headers), 'the head of the memento (Link, CSP, Vary, Preference-Applied…), as at its own URI-M');
    t.match(res.headers.link, `<${PAGE}>; rel="original"`);
    t.match(res.text, `href="${a.url}/2025/memento/20250615000000/${CSS}"`, 'the stylesheet at T');
    t.match(res.text, `src="${a.url}/2025/memento/20250615000000/${SITE}/logo.png"`, 'the image at T');
    t.match(res.text, `href="${a.url}/2025/memento/20250615000000/${SITE}/next.html"`, 'a link at T');
    t.match(res.text, 'data-memento-datetime="20250601000000"', "the replay shim's clock: the page's own Memento-Datetime");
    t.notMatch(res.text, /memento\/20250601000000\//, 'no URL rewritten at the memento’s own time');
    t.match(plain.text, `href="${a.url}/2025/memento/20250601000000/${CSS}"`, 'the plain URI-M still rewrites at its own datetime');
    t.notMatch(plain.text, /20250615000000/);
  }
  const css = await request(`${a.url}/2025/memento/20250615000000/${CSS}`);
  t.equal(css.status, 302);
  t.equal(css.headers.location, `${a.url}/2025/memento/20250610000000/${CSS}`, 'the stylesheet at T: the capture nearest to T, not to the page');
  const head = await request(atT, { method: 'HEAD' });
  t.equal(head.status, 200);
  t.equal(head.body.length, 0);
  t.same(noDate(head.headers), noDate((await request(atT)).headers), 'HEAD: the same head');
});

t.test('<T>if_ at a stored T is that memento as at its own URI-M', async (t) => {
  const plain = await request(own);
  const res = await request(`${a.url}/2025/memento/20250601000000if_/${PAGE}`);
  t.equal(res.status, 200);
  t.same(noDate(res.headers), noDate(plain.headers));
  t.equal(res.text, plain.text);
});

t.test('<T>if_ whose nearest memento is in another archive: 302 there, T kept', async (t) => {
  const res = await request(`${a.url}/2025/memento/20260115000000if_/${PAGE}`);
  t.equal(res.status, 302);
  t.equal(res.headers.location, `${a.url}/current/memento/20260115000000if_/${PAGE}`);
  t.equal(res.headers['access-control-allow-origin'], '*');
  t.notOk(res.headers['memento-datetime'], 'the redirect is not a Memento');
  const there = await request(res.headers.location!);
  t.equal(there.status, 200);
  t.equal(there.headers['memento-datetime'], 'Sun, 01 Feb 2026 00:00:00 GMT');
  t.equal(there.headers['content-location'], `${a.url}/current/memento/20260201000000/${PAGE}`);
  t.match(there.text, `href="${a.url}/current/memento/20260115000000/${CSS}"`, 'rewritten at T in the archive of the memento');
});

t.test('every other modifier, no modifier, a timestamp prefix and a Prefer for a stored form: 302 to the nearest URI-M', async (t) => {
  for (const mod of ['', 'im_', 'js_', 'cs_', 'oe_', 'fw_']) {
    const res = await request(`${a.url}/2025/memento/20250615000000${mod}/${PAGE}`);
    t.equal(res.status, 302, mod || 'no modifier');
    t.equal(res.headers.location, own, mod || 'no modifier');
  }
  const raw = await request(`${a.url}/2025/memento/20250615000000id_/${PAGE}`);
  t.equal(raw.headers.location, `${a.url}/2025/memento/20250601000000id_/${PAGE}`);
  const prefix = await request(`${a.url}/2025/memento/202506if_/${PAGE}`);
  t.equal(prefix.status, 302, 'a period: the redirect');
  t.equal(prefix.headers.location, own);
  const preferRaw = await request(atT, { headers: { prefer: 'original-content' } });
  t.equal(preferRaw.status, 302, 'Prefer: original-content at <T>if_');
  t.equal(preferRaw.headers.location, own);
});

t.test('<T>if_ of a URL never captured is 404, of a blocked one 451, as at any Memento address', async (t) => {
  const never = await request(`${a.url}/2025/memento/20250615000000if_/${SITE}/never.html`);
  t.equal(never.status, 404);
  t.notOk(never.headers['memento-datetime']);
  const blocked = await request(`${a.url}/2025/memento/20250615000000if_/${BLOCKED}`);
  t.equal(blocked.status, 451);
  t.notOk(blocked.headers['memento-datetime']);
  t.notMatch(blocked.text, /withheld/);
  const exact = await request(`${a.url}/2025/memento/20250601000000if_/${BLOCKED}`);
  t.equal(exact.status, 451, 'at its stored datetime too');
});
