/**
 * The evidence log over HTTP (docs/evidence.md): every capture (revisits
 * included) is an entry naming its own WARC record; `/log` is a signed
 * tree head whose signature verifies with the key it gives; `/proof`
 * proves a memento's entry into it; `/log/consistency` proves one tree
 * is a prefix of another. Checked against a naive transcription of RFC
 * 9162 §2.1 (MTH, PATH, PROOF) over the entries recomputed from the WARC
 * files, not against the archive's own Merkle code.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import t, { type Test } from 'tap';
import { epoch, partsOf, ts14 } from '../../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { warcRecords } from '../helpers.js';
import { until } from '../../helpers/until.js';

const sha = (...parts: Buffer[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const split = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};
const mth = (d: Buffer[]): Buffer =>
  d.length === 0 ? sha() : d.length === 1 ? sha(Buffer.of(0), d[0]) : sha(Buffer.of(1), mth(d.slice(0, split(d.length))), mth(d.slice(split(d.length))));
const path = (m: number, d: Buffer[]): Buffer[] => {
  if (d.length <= 1) return [];
  const k = split(d.length);
  return m < k ? [...path(m, d.slice(0, k)), mth(d.slice(k))] : [...path(m - k, d.slice(k)), mth(d.slice(0, k))];
};
const subproof = (m: number, d: Buffer[], b: boolean): Buffer[] => {
  if (m === d.length) return b ? [] : [mth(d)];
  const k = split(d.length);
  return m <= k ? [...subproof(m, d.slice(0, k), b), mth(d.slice(k))] : [...subproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
};
const b64 = (l: Buffer[]) => l.map((x) => x.toString('base64'));

const DATES = ['Mon, 01 Jan 2001 00:00:00 GMT', 'Tue, 02 Jan 2001 00:00:00 GMT', 'Sat, 03 Feb 2001 00:00:00 GMT', 'Sun, 04 Mar 2001 00:00:00 GMT'];

interface Head {
  origin: string | null;
  tree_size: number;
  root_hash: string;
  timestamp: number;
  signature: string;
  public_key: string;
}

/** Whether a head's signature verifies with the key it names, over `<origin>\n<tree_size>\n<root_hash>\n<timestamp>` (`origin` default the head's own). */
function signed(h: Head, origin = h.origin): boolean {
  const key = createPublicKey({ key: Buffer.from(h.public_key, 'base64'), format: 'der', type: 'spki' });
  return verify(null, Buffer.from(`${origin}\n${h.tree_size}\n${h.root_hash}\n${h.timestamp}`), key, Buffer.from(h.signature, 'base64'));
}

async function json<T>(t: Test, url: string): Promise<T> {
  const r = await request(url);
  t.equal(r.status, 200, url);
  t.match(r.headers['content-type'], /^application\/json/);
  t.equal(r.headers['cache-control'], 'no-cache');
  return JSON.parse(r.text) as T;
}

/**
 * The leaf texts the archive's WARC records call for, in capture order: URI-R, 14 digits, record id, block digest
 * recomputed, `via` (the record's Archive-Capture-Via), and for a revisit its WARC-Refers-To and WARC-Payload-Digest.
 */
async function expectedLeaves(a: TestArchive, archive: string): Promise<Buffer[]> {
  const recs = (await warcRecords(a.dataDir, archive)).filter((r) => r.type === 'response' || r.type === 'revisit');
  return recs.map((r) => {
    const h = (k: string) => r.headers.get(k)!;
    const revisit = r.type === 'revisit' ? `\nrefers-to ${h('warc-refers-to')}\npayload-digest ${h('warc-payload-digest')}` : '';
    return Buffer.from(
      `${r.target}\n${ts14(new Date(h('warc-date')).toUTCString())}\n${h('warc-record-id')}\nsha256:${sha(r.block).toString('hex')}\nvia ${h('archive-capture-via')}${revisit}`,
    );
  });
}

t.test('an empty log has a signed head of size 0 and the empty root', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const h = await json<Head>(t, `${a.url}/2025/log`);
  t.equal(h.tree_size, 0);
  t.equal(h.root_hash, sha().toString('base64'), 'SHA-256 of the empty string');
  t.ok(signed(h), 'the signature verifies with the public key given');
  t.type(h.timestamp, 'number');
  t.equal((await request(`${a.url}/nosuch/log`)).status, 404, 'an archive that is not there');
});

t.test("a head names its log: one archive's head never verifies as another's", async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const old = await json<Head>(t, `${a.url}/2025/log`);
  const cur = await json<Head>(t, `${a.url}/current/log`);
  t.equal(old.origin, `127.0.0.1:${a.port}/2025`, 'origin: the listen address (no base_url) and the archive id');
  t.equal(cur.origin, `127.0.0.1:${a.port}/current`);
  t.equal(old.tree_size, cur.tree_size, 'two empty logs: same size and root');
  t.ok(signed(old) && signed(cur), 'each verifies as its own');
  t.notOk(signed(old, cur.origin), "2025's head does not verify as current's");
  t.notOk(signed(cur, old.origin), "current's head does not verify as 2025's");
  const b = await startArchive(`base_url: https://archive.example.org/web/\n${TWO_ARCHIVES}`);
  t.teardown(() => b.close());
  t.equal(
    (await json<Head>(t, `${b.url}/current/log`)).origin,
    'archive.example.org/web/current',
    'with base_url: its host and path, no scheme, no trailing slash',
  );
});

t.test('captures and revisits are entries; /log, /proof and /log/consistency prove them as RFC 9162 says', async (t) => {
  const a = await startArchive(`revisit_interval: 1s\n${TWO_ARCHIVES}`);
  t.teardown(() => a.close());
  const uris = ['http://www.example.org/a', 'http://www.example.org/b?x=1'];
  const mementos: [string, string][] = [];
  for (const date of DATES)
    for (const u of uris) {
      // Same body every time: after the first, each capture of a URL is a revisit.
      const r = await putCapture(a, u, captureRecord({ ...partsOf(u), date, body: `body of ${u}` }));
      t.equal(r.status, 201);
      mementos.push([u, date]);
    }
  const leaves = await expectedLeaves(a, '2025');
  t.equal(leaves.length, 8, 'one entry per memento, revisits included');
  const head = await json<Head>(t, `${a.url}/2025/log`);
  t.ok(head.tree_size >= 0);
  for (const [u, date] of mementos) {
    const p = await json<{ leaf: Record<string, string>; leaf_index: number; tree_size: number; audit_path: string[]; sth: Head }>(
      t,
      `${a.url}/2025/proof/${ts14(date)}/${u}`,
    );
    const revisit = p.leaf.refers_to ? `\nrefers-to ${p.leaf.refers_to}\npayload-digest ${p.leaf.payload_digest}` : '';
    const text = Buffer.from(`${p.leaf.uri}\n${p.leaf.datetime}\n${p.leaf.record_id}\n${p.leaf.digest}\nvia ${p.leaf.via}${revisit}`);
    t.same(text, leaves[p.leaf_index], `${u} ${date}: the entry names its WARC record (id and block digest recomputed)`);
    t.equal(p.leaf.uri, u);
    t.equal(p.leaf.datetime, ts14(date));
    t.equal(p.tree_size, p.sth.tree_size);
    t.ok(p.sth.tree_size > p.leaf_index, 'the head covers the entry (signed now if it did not)');
    t.ok(signed(p.sth), 'the head of the proof is signed');
    const d = leaves.slice(0, p.tree_size);
    t.equal(p.sth.root_hash, mth(d).toString('base64'), 'root = MTH of the entries');
    t.same(p.audit_path, b64(path(p.leaf_index, d)), 'audit path = PATH(m, D[n])');
  }
  const now = await json<Head>(t, `${a.url}/2025/log`);
  t.equal(now.tree_size, 8, 'the newest head covers every entry');
  const kept = await json<Head>(t, `${a.url}/2025/log?tree_size=8`);
  t.same(kept, now, '?tree_size=N gives the kept head of that size');
  for (let m = 1; m <= 8; m++) {
    const c = await json<{ first: number; second: number; proof: string[] }>(t, `${a.url}/2025/log/consistency?first=${m}&second=8`);
    t.same(c, { first: m, second: 8, proof: b64(subproof(m, leaves, true)) }, `PROOF(${m}, D[8])`);
  }
  t.equal(epoch(DATES[0]) > 0, true);
});

t.test('bad input is 400 with one line; a memento not stored or hidden is not proved', async (t) => {
  const a = await startArchive(
    `${TWO_ARCHIVES}access:\n  - url: http://www.example.org/blocked\n    action: block\n  - url: http://www.example.org/gone\n    action: exclude\n`,
  );
  t.teardown(() => a.close());
  for (const u of ['http://www.example.org/ok', 'http://www.example.org/blocked', 'http://www.example.org/gone'])
    t.equal((await putCapture(a, u, captureRecord({ ...partsOf(u), date: DATES[0] }))).status, 201);
  await json(t, `${a.url}/2025/proof/${ts14(DATES[0])}/http://www.example.org/ok`);
  // The newest signed tree head covers all three entries (heads are signed within about a second of new entries).
  await until(async () => JSON.parse((await request(`${a.url}/2025/log`)).text).tree_size === 3, 10_000, 'a signed tree head of size 3');
  const cases: [string, number, RegExp][] = [
    [`/2025/log?tree_size=x`, 400, /^tree_size is not a tree size/],
    [`/2025/log?tree_size=99`, 404, /^no signed tree head of size 99/],
    [`/2025/log/consistency?first=0&second=1`, 400, /^consistency needs 0 < first <= second <= 3/],
    [`/2025/log/consistency?first=2&second=1`, 400, /^consistency needs/],
    [`/2025/log/consistency?first=1&second=4`, 400, /^consistency needs/],
    [`/2025/log/consistency?first=1`, 400, /^the query lacks second=/],
    [`/2025/proof/2001/http://www.example.org/ok`, 400, /^a proof address is/],
    [`/2025/proof/20010101000001/http://www.example.org/ok`, 404, /^no memento of http:\/\/www.example.org\/ok at 20010101000001/],
    [`/2025/proof/${ts14(DATES[0])}/http://www.example.org/gone`, 404, /^no memento of/],
    [`/2025/proof/${ts14(DATES[0])}/http://www.example.org/blocked`, 451, /access rules withhold/],
  ];
  for (const [p, status, body] of cases) {
    const r = await request(a.url + p);
    t.equal(r.status, status, p);
    t.match(r.text, body, p);
    t.equal(r.text.trim().split('\n').length, 1, `${p}: one line`);
  }
});
