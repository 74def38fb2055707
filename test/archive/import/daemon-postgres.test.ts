/**
 * `memento-archive import --daemon` into a daemon whose index is in
 * PostgreSQL (docs/operations.md "Data in and out"): a crawler's WARC file
 * holding a response and, two days later, a revisit record of it is
 * imported through the daemon; the revisit resolves to the response just
 * imported (in the daemon's index, not in some file of the data folder)
 * and is served with the original's body, the TimeMap lists both, and no
 * SQLite index file appears in the data folder.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { request } from '../../helpers/archive.js';
import { startDaemon } from '../../helpers/daemons.js';
import { startPostgres } from '../../helpers/postgres.js';
import { exchange, httpResponse, recordId, sha1Digest, warcFile, warcRecord } from '../../helpers/warc.js';
import { runCli, writeConfig } from '../helpers.js';

const URI = 'http://www.example.org/page';
const PAGE = '<html><body>the page, crawled twice</body></html>';

/** A response of {@link URI} on 1 January 2026 and a revisit record of it (naming it by WARC-Refers-To, Heritrix-style) on 3 January. */
function crawl(file: string): void {
  const day1 = 'Thu, 01 Jan 2026 10:00:00 GMT';
  const day3 = 'Sat, 03 Jan 2026 10:00:00 GMT';
  const response = exchange(
    URI,
    '2026-01-01T10:00:00Z',
    httpResponse(
      '200 OK',
      [
        ['Content-Type', 'text/html'],
        ['Date', day1],
      ],
      PAGE,
    ),
  );
  const revisit = warcRecord(
    [
      ['WARC-Type', 'revisit'],
      ['WARC-Record-ID', recordId()],
      ['WARC-Date', '2026-01-03T10:00:00Z'],
      ['WARC-Target-URI', URI],
      ['WARC-Profile', 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest'],
      ['WARC-Refers-To', response.id],
      ['WARC-Refers-To-Target-URI', URI],
      ['WARC-Refers-To-Date', '2026-01-01T10:00:00Z'],
      ['WARC-Payload-Digest', sha1Digest(PAGE)],
      ['Content-Type', 'application/http; msgtype=response'],
    ],
    `HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nDate: ${day3}\r\n\r\n`,
  );
  writeFileSync(file, warcFile([...response.records, revisit], true));
}

t.test('import --daemon on a PostgreSQL index: a revisit of a response of the same file is served, and no index.sqlite3 appears', async (t) => {
  const server = await startPostgres();
  t.teardown(() => server.stop());
  const db = await server.database('archive');
  const c = writeConfig(`storage:\n  index: ${db}\n`);
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  mkdirSync(c.dataDir);
  const d = await startDaemon('memento-archive.js', ['serve', '--config', c.config, '--quiet']);
  t.teardown(() => d.stop());
  const file = path.join(c.dir, 'crawl.warc.gz');
  crawl(file);

  const r = await runCli(['import', '--config', c.config, '--daemon', d.url, file]);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(
    r.stdout,
    /: 1 new memento, 1 revisit memento, 0 duplicates, 1 revisit record resolved, 0 revisit records unresolved \(skipped\), 0 refused;/,
    r.stdout,
  );
  t.notMatch(r.stdout, /^unresolved:/m, 'no revisit record skipped');
  t.match(r.stdout, /through the running daemon at /);

  const revisit = await request(`${d.url}/current/memento/20260103100000id_/${URI}`);
  t.equal(revisit.status, 200, 'the revisit is a memento');
  t.equal(revisit.text, PAGE, "it serves the original's body");
  const record = await request(`${d.url}/current/record/20260103100000/${URI}`);
  t.match(record.text, /^WARC-Type: revisit\r$/m, 'stored as a revisit record');
  const timemap = await request(`${d.url}/current/timemap/link/${URI}`);
  t.equal(timemap.status, 200);
  t.match(timemap.text, `<${d.url}/current/memento/20260101100000/${URI}>`, 'the TimeMap lists the response');
  t.match(timemap.text, `<${d.url}/current/memento/20260103100000/${URI}>`, 'and the revisit');
  t.notOk(existsSync(path.join(c.dataDir, 'index.sqlite3')), 'no index.sqlite3 in the data folder');
});
