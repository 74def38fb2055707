/**
 * What someone who can write the data folder (the WARC files and the
 * SQLite index, not the signing key) can change, and what the archive
 * then says: `memento-archive verify` run as a user runs it (its exit
 * code and lines), `/proof` and the "Verify this capture" page over HTTP.
 * Each attack is done as an attacker would: WARC bytes rewritten (with
 * their WARC digests recomputed, so that the record itself looks intact)
 * and index rows and log entries edited with SQL, the daemon stopped.
 *
 * - a stored record's body changed: the page says it does not match;
 * - a revisit's header and row pointed at another page's body: verify
 *   and the page name it;
 * - the newest log entries and rows deleted: verify names what is
 *   missing, `/proof` does not call it "indexed before the log was kept";
 * - rows rewritten to another status, media type or urlkey: verify names them.
 */
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import t, { type Test } from 'tap';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { forge, rewriteRecord, rowOf, sha, sql } from '../../helpers/tamper.js';
import { runCli } from '../helpers.js';

const SITE = 'http://www.example.org';
const D1 = 'Mon, 05 Jan 2026 09:00:00 GMT';
const D2 = 'Tue, 06 Jan 2026 09:00:00 GMT';
const D3 = 'Thu, 08 Jan 2026 09:00:00 GMT';
const TS = (d: string) => new Date(d).toISOString().replace(/[-:T]/g, '').slice(0, 14);

/** A config file for the CLI on `a`'s data folder. */
function configOf(a: TestArchive): string {
  const file = path.join(a.dataDir, 'archive.yaml');
  writeFileSync(file, `listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(a.dataDir)}\n${TWO_ARCHIVES}`, { mode: 0o600 });
  return file;
}

/** An archive with captures `list` (URL path, date, body), stopped; its data folder kept (removed at the end of `t`). */
async function captured(t: Test, list: [string, string | null, string][]): Promise<TestArchive> {
  const a = await startArchive();
  t.teardown(() => rmSync(a.dataDir, { recursive: true, force: true }));
  // The log's first tree head (when the log was begun) before any capture, and the captures dated by the clock in a later second.
  const begun = JSON.parse((await request(`${a.url}/current/log`)).text).timestamp as number;
  while (Date.now() < Math.ceil((begun + 1) / 1000) * 1000) await new Promise((r) => setTimeout(r, 20));
  for (const [p, date, body] of list) {
    const r = await putCapture(a, SITE + p, captureRecord({ target: p, date, body }));
    t.equal(r.status, 201, `PUT ${p} ${date}`);
  }
  await a.close(true);
  return a;
}

/** The archive on `a`'s data folder again. */
async function restart(t: Test, a: TestArchive): Promise<TestArchive> {
  const b = await startArchive(TWO_ARCHIVES, { dataDir: a.dataDir });
  t.teardown(() => b.close(true));
  return b;
}

async function verifyCli(a: TestArchive) {
  const r = await runCli(['verify', '--config', configOf(a)]);
  return { ...r, problems: r.stdout.split('\n').filter((l) => l.startsWith('problem: ')) };
}

t.test('a stored record changed (WARC digests recomputed): verify FAILS and "Verify this capture" says it does not match', async (t) => {
  const a = await captured(t, [
    ['/statement.html', D1, '<h1>Refunds</h1><p>We refund every order within 30 days.</p>'],
    ['/index.html', D1, '<h1>Shop</h1>'],
  ]);
  t.equal((await verifyCli(a)).code, 0, 'verify passes before');
  const row = await rowOf(a.dataDir, `${SITE}/statement.html`, D1);
  const rec = await rewriteRecord(a.dataDir, row, (r) =>
    forge(r, {}, (b) => Buffer.from(b.toString('latin1').replace('We refund', 'We never refund'), 'latin1')),
  );
  const body = rec.subarray(rec.indexOf('\r\n\r\n') + 4);
  await sql(a.dataDir, 'UPDATE memento SET digest = ? WHERE id = ?', [sha(body.subarray(body.indexOf('\r\n\r\n') + 4, body.length - 4)), row.id]);

  const v = await verifyCli(a);
  t.equal(v.code, 1, 'verify exits 1');
  t.match(v.stdout, /verify: FAILED/);
  t.ok(
    v.problems.some((p) => p.includes('does not match its WARC record')),
    v.problems.join('\n'),
  );

  const b = await restart(t, a);
  const raw = await request(`${b.url}/current/memento/${TS(D1)}id_/${SITE}/statement.html`);
  t.match(raw.text, /We never refund/, 'the memento replays the change');
  const page = await request(`${b.url}/web/verify/current/${TS(D1)}/${SITE}/statement.html`, { headers: { accept: 'text/html' } });
  t.equal(page.status, 200);
  t.match(page.text, /class="verdict failed"/, 'the verdict is the failed one');
  t.match(page.text, /Does not match/);
  t.notMatch(page.text, /Checked just now/);
  t.match(page.text, /The capture’s WARC record as stored does NOT match its log entry/);
  t.match(page.text, /This archive checked its own copy just now/, 'it says who checked');
  const key = JSON.parse((await request(`${b.url}/current/log`)).text).public_key as string;
  const fingerprint = createHash('sha256').update(Buffer.from(key, 'base64')).digest('hex');
  t.match(page.text, fingerprint, "the key's fingerprint (SHA-256 of the public key)");

  const good = await request(`${b.url}/web/verify/current/${TS(D1)}/${SITE}/index.html`, { headers: { accept: 'text/html' } });
  t.match(good.text, /class="verdict ok"/, 'an untouched capture matches');
  t.match(good.text, /Matches the archive’s signed log/);
  t.match(good.text, /hash to sha256:[0-9a-f]{64}, the digest its log entry holds/);
  t.match(good.text, /It came in as a capture PUT/, 'how it came in');
});

t.test('a revisit pointed at another page’s body (its WARC header and row rewritten): verify and the page name it', async (t) => {
  const a = await captured(t, [
    ['/statement.html', D1, '<p>Prices include VAT.</p>'],
    ['/other.html', D2, '<p>Prices exclude VAT.</p>'],
    ['/statement.html', D3, '<p>Prices include VAT.</p>'],
  ]);
  const revisit = await rowOf(a.dataDir, `${SITE}/statement.html`, D3);
  const other = await rowOf(a.dataDir, `${SITE}/other.html`, D2);
  const [{ refers_to: was }] = await sql(a.dataDir, 'SELECT refers_to FROM memento WHERE id = ?', [revisit.id]);
  t.ok(was, 'the third capture is a revisit');
  t.equal((await verifyCli(a)).code, 0, 'verify passes before');
  // The other page's record id, as a forger reads it from its record.
  const otherRec = zlib.gunzipSync(
    readFileSync(path.join(a.dataDir, 'warcs', other.warc_file)).subarray(other.warc_offset, other.warc_offset + other.warc_length),
  );
  const otherId = /^WARC-Record-ID: (.*)\r$/m.exec(otherRec.toString('latin1'))![1];
  await rewriteRecord(a.dataDir, revisit, (r) =>
    forge(r, {
      'WARC-Refers-To': otherId,
      'WARC-Refers-To-Target-URI': `${SITE}/other.html`,
      'WARC-Refers-To-Date': new Date(D2).toISOString().replace('.000', ''),
      'WARC-Payload-Digest': other.digest,
    }),
  );
  await sql(a.dataDir, 'UPDATE memento SET refers_to = ?, digest = ? WHERE id = ?', [other.id, other.digest, revisit.id]);

  const v = await verifyCli(a);
  t.equal(v.code, 1, 'verify exits 1');
  t.ok(
    v.problems.some((p) => /log current entry 2 \(http:\/\/www\.example\.org\/statement\.html 20260108090000\) does not match its WARC record/.test(p)),
    v.problems.join('\n'),
  );
  const b = await restart(t, a);
  const replay = await request(`${b.url}/current/memento/${TS(D3)}id_/${SITE}/statement.html`);
  t.match(replay.text, /Prices exclude VAT/, 'the revisit replays the other page’s body');
  const page = await request(`${b.url}/web/verify/current/${TS(D3)}/${SITE}/statement.html`, { headers: { accept: 'text/html' } });
  t.match(page.text, /class="verdict failed"/);
  t.match(page.text, /the body it shows is NOT the one its log entry names/);
});

t.test('the newest log entries and rows deleted (no key needed): verify names what is missing; /proof does not say "before the log"', async (t) => {
  // Dated by the archive's clock (no Date header): after the log was begun.
  const a = await captured(t, [
    ['/a.html', null, 'a'],
    ['/b.html', null, 'b'],
    ['/c.html', null, 'c'],
    ['/d.html', null, 'd'],
  ]);
  t.equal((await verifyCli(a)).code, 0, 'verify passes before');
  const [{ n }] = await sql(a.dataDir, "SELECT count(*) AS n FROM log_leaf WHERE archive_id = 'current'");
  t.equal(n, 4);
  // The cut: entries 2 and 3, the nodes and heads over them, and the rows of d.html (c.html's row stays, without its entry).
  await sql(a.dataDir, "DELETE FROM log_leaf WHERE archive_id = 'current' AND leaf_index >= 2");
  await sql(a.dataDir, "DELETE FROM log_node WHERE archive_id = 'current' AND (idx + 1) * (1 << level) > 2");
  await sql(a.dataDir, "DELETE FROM log_head WHERE archive_id = 'current' AND tree_size > 2");
  await sql(a.dataDir, "DELETE FROM memento WHERE uri_r = 'http://www.example.org/d.html'");

  const v = await verifyCli(a);
  t.equal(v.code, 1, `verify exits 1:\n${v.stdout}`);
  t.ok(
    v.problems.some((p) =>
      /response record of http:\/\/www\.example\.org\/d\.html at .* has no index row and no memento of it is indexed at that second/.test(p),
    ),
    'the record whose row was deleted',
  );
  t.ok(
    v.problems.some((p) =>
      /the memento of http:\/\/www\.example\.org\/c\.html at \d{14} has no entry in the evidence log of archive current, though records written before it have theirs/.test(
        p,
      ),
    ),
    'the row whose entry was deleted',
  );
  t.notMatch(v.stdout, /superseded by a later one/);

  // When a checkpoint over more than the 2 entries left was published before the daemon stopped (the publisher runs
  // within a second of new entries), its anchor beside the key tells the daemon the log was cut back (fewer entries
  // than the checkpoint's) or rewritten (its entries do not have the checkpoint's root): it refuses to start.
  let b: TestArchive;
  try {
    b = await restart(t, a);
  } catch (err) {
    t.match((err as Error).message, /^evidence log of archive current: .*its last published checkpoint .*: the log was (cut back|rewritten); not signing$/);
    return;
  }
  const row = (await sql(a.dataDir, "SELECT datetime FROM memento WHERE uri_r = 'http://www.example.org/c.html'"))[0];
  const ts = new Date(Number(row.datetime) * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const proof = await request(`${b.url}/current/proof/${ts}/${SITE}/c.html`);
  t.equal(proof.status, 404);
  t.notMatch(proof.text, /indexed before the log was kept\)/);
  t.match(proof.text, /though it is dated after the log was begun .*: its entry is missing — the log was cut back or the entry deleted/);
});

t.test('index rows rewritten to another status, media type or urlkey: verify names each', async (t) => {
  const a = await captured(t, [
    ['/terms.html', D1, '<h1>Terms</h1>'],
    ['/prices.html', D1, '<h1>Prices</h1>'],
  ]);
  await sql(a.dataDir, "UPDATE memento SET status = 404, mime = 'application/pdf' WHERE uri_r = ?", [`${SITE}/terms.html`]);
  await sql(a.dataDir, "UPDATE memento SET urlkey = 'org,example)/elsewhere.html' WHERE uri_r = ?", [`${SITE}/prices.html`]);
  const v = await verifyCli(a);
  t.equal(v.code, 1);
  t.ok(
    v.problems.some((p) => /terms\.html\): index status 404, the record's 200$/.test(p)),
    v.problems.join('\n'),
  );
  t.ok(v.problems.some((p) => /terms\.html\): index media type "application\/pdf", the record's "text\/html"$/.test(p)));
  t.ok(v.problems.some((p) => /prices\.html\): index urlkey "org,example\)\/elsewhere\.html", the record's "[^"]+"$/.test(p)));
});
