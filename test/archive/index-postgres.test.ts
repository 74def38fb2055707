/**
 * A daemon whose index is in PostgreSQL (`storage.index`, on a throwaway
 * server: test/helpers/postgres.ts) takes captures by PUT and answers
 * TimeGates, TimeMaps, Mementos, the CDX API and the calendar exactly as a
 * daemon on the SQLite index does, byte for byte but for its own address;
 * and it reads what it wrote after a restart. Without the PostgreSQL
 * server binaries this test fails, saying what to install.
 */
import { rmSync } from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { validateArchiveConfig } from '../../archive/config.js';
import { parseYamlText } from '#shared/config.js';
import { formatHttpDate, replayScript, ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { startPostgres } from '../helpers/postgres.js';
import { runCli, writeConfig } from './helpers.js';

const URI = 'http://www.example.org/page?q=1';
const DATES = ['Mon, 01 Jan 2001 00:00:00 GMT', 'Fri, 01 Jun 2001 12:00:00 GMT', 'Thu, 01 Jan 2026 10:00:00 GMT'];
const REVISIT = 'Sun, 03 Jun 2001 12:00:00 GMT';

/** The page as served at `date`. */
const page = (date: string) => `<html><head><title>${date}</title></head><body>page at ${date}</body></html>`;

/**
 * The captures every daemon takes: three of one page (one per archive
 * span), a same-second duplicate, another page, and the second page again
 * two days later, unchanged: a revisit (revisit_interval 1d).
 */
async function feed(a: TestArchive): Promise<number[]> {
  const statuses: number[] = [];
  const put = async (target: string, date: string, body: string) =>
    statuses.push((await putCapture(a, `http://www.example.org${target}`, captureRecord({ target, date, body }))).status);
  for (const d of DATES) await put('/page?q=1', d, page(d));
  await put('/page?q=1', DATES[1], page(DATES[1]));
  await put('/other', DATES[0], 'other');
  await put('/page?q=1', REVISIT, page(DATES[1]));
  // A page embedding /other and /page?q=1: the banner's "About this capture" panel asks the index about both.
  await put('/with-img', DATES[1], '<html><body><img src="/other"><img src="/page?q=1"></body></html>');
  return statuses;
}

/** What a client asks of the daemon, and the answers with the daemon's own address taken out. */
async function answers(a: TestArchive): Promise<string[]> {
  const asks: [string, Record<string, string>?][] = [
    [`/2025/timegate/${URI}`],
    [`/2025/timegate/${URI}`, { 'accept-datetime': 'Sat, 02 Jun 2001 00:00:00 GMT' }],
    [`/current/timegate/${URI}`],
    [`/tg/${URI}`, { 'accept-datetime': 'Mon, 01 Jan 1990 00:00:00 GMT' }],
    [`/2025/timemap/link/${URI}`],
    [`/2025/timemap/json/${URI}`],
    [`/tm/link/${URI}`],
    [`/2025/memento/${ts14(DATES[1])}/${URI}`],
    [`/2025/memento/${ts14(DATES[0])}/http://www.example.org/other`],
    [`/2025/memento/20010301000000/${URI}`],
    [`/2025/memento/${ts14(REVISIT)}/${URI}`],
    [`/2025/timegate/${URI}`, { 'accept-datetime': 'Mon, 04 Jun 2001 00:00:00 GMT' }],
    [`/2025/timegate/http://nowhere.example.org/`],
    ['/cdx?url=www.example.org/&matchType=prefix&output=json&fl=urlkey,timestamp,url,mime,status,digest,archive'],
    ['/cdx?url=www.example.org/page?q=1&sort=closest&closest=20010301000000&fl=timestamp,status'],
    [`/web/*/${URI}`],
    [`/web/20010602/http://www.example.org/with-img`],
  ];
  const out: string[] = [];
  for (const [target, headers] of asks) {
    const res = await request(a.url + target, { headers });
    const keep = ['location', 'link', 'memento-datetime', 'content-type', 'vary'].map((h) => `${h}: ${String(res.headers[h] ?? '')}`);
    // A page's script nonce is new on every answer.
    const text = res.text.replace(/nonce="[^"]*"/g, 'nonce="…"');
    out.push([`${target} → ${res.status}`, ...keep, text].join('\n').split(a.url).join('<archive>'));
  }
  return out;
}

t.test('a daemon on a PostgreSQL index answers as one on SQLite, and again after a restart', async (t) => {
  let pg: Awaited<ReturnType<typeof startPostgres>>;
  try {
    pg = await startPostgres();
  } catch (err) {
    t.fail((err as Error).message);
    return;
  }
  t.teardown(() => pg.stop());
  const url = await pg.database('archive');
  const lite = await startArchive();
  t.teardown(() => lite.close());
  const onPg = await startArchive(`storage:\n  index: ${url}\n${TWO_ARCHIVES}`);
  let onPgOpen = true;
  t.teardown(() => (onPgOpen ? onPg.close() : undefined));
  t.equal(onPg.config.indexPostgres, url);

  t.same(await feed(lite), [201, 201, 201, 200, 201, 201, 201], 'SQLite: new, new, new, duplicate, new, revisit, new');
  t.same(await feed(onPg), [201, 201, 201, 200, 201, 201, 201], 'PostgreSQL: the same');
  t.equal(await onPg.store.index.count(), 6, 'six rows in PostgreSQL');
  const [revisit] = await onPg.store.index.page('2025', 'org,example,www)/page?q=1', Date.parse(REVISIT) / 1000 - 1, 1);
  const [original] = await onPg.store.index.page('2025', 'org,example,www)/page?q=1', Date.parse(DATES[1]) / 1000 - 1, 1);
  t.equal(revisit.refers_to, original.id, "the revisit's row refers to the original's");

  const want = await answers(lite);
  const got = await answers(onPg);
  for (const [i, w] of want.entries()) t.equal(got[i], w, w.split('\n')[0]);
  // The answers themselves, not only their likeness: the Memento of the middle capture.
  const memento = await request(`${onPg.url}/2025/memento/${ts14(DATES[1])}/${URI}`);
  t.equal(memento.status, 200);
  t.equal(memento.headers['memento-datetime'], DATES[1]);
  t.equal(memento.text, `<html><head>${replayScript(onPg.url, DATES[1])}<title>${DATES[1]}</title></head><body>page at ${DATES[1]}</body></html>`);
  const revisited = await request(`${onPg.url}/2025/memento/${ts14(REVISIT)}/${URI}`);
  t.equal(revisited.headers['memento-datetime'], REVISIT, 'the revisit is a memento of its own');
  t.equal(
    revisited.text,
    `<html><head>${replayScript(onPg.url, REVISIT)}<title>${DATES[1]}</title></head><body>page at ${DATES[1]}</body></html>`,
    "with the original's body",
  );
  const gate = await request(`${onPg.url}/2025/timegate/${URI}`, { headers: { 'accept-datetime': formatHttpDate(new Date('2001-06-02T00:00:00Z')) } });
  t.equal(gate.status, 302);
  t.equal(gate.headers.location, `${onPg.url}/2025/memento/${ts14(DATES[1])}/${URI}`);

  // A new daemon on the same database (a fresh data folder: the index is not in it) reads the rows; its WARC files are the first one's.
  await onPg.close(true);
  onPgOpen = false;
  const again = await startArchive(`storage:\n  index: ${url}\n${TWO_ARCHIVES}`, { dataDir: onPg.dataDir });
  t.teardown(() => again.close());
  t.equal(
    (await request(`${again.url}/2025/timemap/link/${URI}`)).text,
    (await request(`${lite.url}/2025/timemap/link/${URI}`)).text.split(lite.url).join(again.url),
  );
});

t.test('a PostgreSQL index that cannot be reached: the store does not open, the message names the database without its password', async (t) => {
  // A port nothing listens on: taken, then let go.
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  await t.rejects(startArchive(`storage:\n  index: postgres://postgres:secret@127.0.0.1:${port}/archive\n${TWO_ARCHIVES}`), {
    name: 'Error',
    message: new RegExp(`^the index database postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${port}/archive: .*ECONNREFUSED`),
  });
});

t.test('serve with a PostgreSQL index that cannot be reached exits 1 in one line (the other commands: pg-upkeep.test.ts)', async (t) => {
  const { dir, config } = writeConfig('storage:\n  index: postgres://archive@127.0.0.1:1/archive\n');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const serve = await runCli(['serve', '--config', config]);
  t.equal(serve.code, 1);
  t.match(serve.stderr, /^memento-archive: the index database postgres:\/\/archive@127\.0\.0\.1:1\/archive: connect ECONNREFUSED 127\.0\.0\.1:1\n$/);
});

t.test('storage.index: sqlite (the default) or a postgres:// URL; anything else is refused with the reason', async (t) => {
  const load = (storage: string) => validateArchiveConfig(parseYamlText(`${storage}${TWO_ARCHIVES}`, '/etc/memento/archive.yaml'));
  t.equal(load('').indexPostgres, undefined, 'default: SQLite');
  t.equal(load('storage:\n  index: sqlite\n').indexPostgres, undefined);
  t.equal(load('storage:\n  index: postgresql://u@db:5432/a\n').indexPostgres, 'postgresql://u@db:5432/a');
  t.throws(() => load('storage:\n  index: mysql://u@db/a\n'), {
    message: /archive\.yaml:2: storage\.index must be sqlite or a URL like postgres:\/\/user@host:5432\/archive, not "mysql:\/\/u@db\/a"/,
  });
  t.throws(() => load('storage:\n  warcs: s3://b/\n'), { message: /archive\.yaml:2/ }, 'no other key yet');
});
