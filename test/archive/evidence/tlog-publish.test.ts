/**
 * Publishing checkpoints (docs/evidence.md "Witnesses", "Timestamps",
 * "The anchor"): no checkpoint short of its witness quorum, or without its
 * time-stamp token, is ever served; a witness that failed is asked again
 * without new captures; a witness that cosigned another size is given the
 * proof from that size (its 409); the token is served and rides in
 * receipts; a log cut back in the database below its last published
 * checkpoint is refused at start (one line) and, while running, makes
 * the daemon unhealthy and sign nothing more. The witnesses and the
 * time-stamping authority here are stand-ins in the test (the daemon's
 * `tlogClients` option); test/archive/evidence/tlog-witness.test.ts runs
 * real ones.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { readFileSync, rmSync, truncateSync } from 'node:fs';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import t from 'tap';
import { validateArchiveConfig } from '../../../archive/config.js';
import { LogAnchorError } from '../../../archive/evidence/checkpoint-anchor.js';
import { ConfigError, parseYamlText } from '#shared/config.js';
import type { TlogClients } from '../../../archive/evidence/checkpoint-publisher.js';
import { cosignatureLine, formatVerifierKey, noteSignerOf, SIG_COSIGNATURE_V1, verifierKeyOf } from '../../../archive/evidence/signed-note.js';
import { exactUrlkey } from '#shared/uri.js';
import { partsOf } from '../../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { mthOfHashes, verifyConsistency } from '../../helpers/rfc9162.js';

const sha = (...parts: (Buffer | string)[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

/** Polls `check` until it returns a value other than `undefined`; fails after `ms`. */
async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A witness stand-in, as C2SP tlog-witness asks: it keeps the size it last
 * cosigned, answers 409 with it when the old size differs, checks the
 * consistency proof (test/helpers/rfc9162.ts), and cosigns (Ed25519,
 * tlog-cosignature v1). `down` makes it fail as an unreachable one.
 */
function standInWitness(name: string) {
  const { privateKey } = generateKeyPairSync('ed25519');
  const signer = noteSignerOf(name, privateKey);
  const w = {
    name,
    vkey: formatVerifierKey(verifierKeyOf(name, privateKey, SIG_COSIGNATURE_V1)),
    size: 0,
    root: sha(),
    down: 0,
    asked: 0,
    async add(req: { oldSize: number; proof: readonly Buffer[]; note: string }): Promise<string[]> {
      w.asked++;
      if (w.down > 0) {
        w.down--;
        throw Object.assign(new Error(`witness ${name}: connect ECONNREFUSED`), {});
      }
      const text = req.note.slice(0, req.note.indexOf('\n\n') + 1);
      const [, size, root] = text.split('\n');
      const n = Number(size);
      const r = Buffer.from(root, 'base64');
      if (req.oldSize !== w.size) throw Object.assign(new Error(`witness ${name}: 409`), { status: 409, recordedSize: w.size });
      if (w.size > 0 && !verifyConsistency(w.size, n, w.root, r, req.proof)) throw Object.assign(new Error(`witness ${name}: 422`), { status: 422 });
      w.size = n;
      w.root = r;
      return [cosignatureLine(text, signer, Math.floor(Date.now() / 1000))];
    },
  };
  return w;
}

/** The signature lines of a note, by name. */
const signers = (note: string) => [...note.matchAll(/^— (\S+) /gm)].map((m) => m[1]);

t.test('no checkpoint short of the quorum is served; a failed witness is asked again without new captures', async (t) => {
  const w1 = standInWitness('w1.example/w');
  const w2 = standInWitness('w2.example/w');
  // Down until the test has seen the checkpoint withheld (a count of failures would race the publisher's retries).
  w2.down = Number.MAX_SAFE_INTEGER;
  const clients: TlogClients = {
    addCheckpoint: (w, req) => (w.name === w1.name ? w1 : w2).add(req),
    timestamp: async () => {
      throw new Error('no tsa here');
    },
  };
  const witnesses = `witnesses:\n  - {name: ${w1.name}, url: "http://127.0.0.1:9/w1", key: "${w1.vkey}"}\n  - {name: ${w2.name}, url: "http://127.0.0.1:9/w2", key: "${w2.vkey}"}\n`;
  const a = await startArchive(`base_url: http://archive.example.org\n${witnesses}${TWO_ARCHIVES}`, { server: { tlogClients: clients } });
  t.teardown(() => a.close());
  const u = 'http://www.example.org/q';
  t.equal((await putCapture(a, u, captureRecord({ ...partsOf(u), date: 'Mon, 01 Jan 2001 00:00:00 GMT' }))).status, 201);
  await until('w1 cosigned size 1', async () => (w1.size === 1 ? true : undefined));
  t.equal((await request(`${a.url}/2025/tlog/checkpoint`)).status, 404, 'one cosignature of two: not published');
  const early = await request(`${a.url}/2025/receipt/20010101000000/${u}`);
  t.equal(early.status, 404, 'and no receipt');
  t.equal(early.headers['retry-after'], '2', 'yet: Retry-After');
  t.match(early.text, /is not in a published checkpoint yet; ask again in a few seconds/);
  await until('w2 asked twice', async () => (w2.asked >= 2 ? true : undefined));
  w2.down = 0;
  const note = await until('published', async () => {
    const r = await request(`${a.url}/2025/tlog/checkpoint`);
    return r.status === 200 && r.text.includes('\n1\n') ? r.text : undefined;
  });
  t.ok(w2.asked >= 3, `w2 asked again (${w2.asked} times) with no new capture`);
  t.same(signers(note), ['archive.example.org/2025', 'w1.example/w', 'w2.example/w'], "the log's signature, then the cosignatures in the order of the config");
  const receipt = await request(`${a.url}/2025/receipt/20010101000000/${u}`);
  t.equal(receipt.status, 200);
  t.ok(receipt.text.endsWith(note), 'the receipt carries the checkpoint with its cosignatures');
});

t.test('a witness that cosigned another size gets the proof from it (409); the time-stamp token is kept, served, in receipts', async (t) => {
  const w = standInWitness('w.example/w');
  let tsaDown = 1;
  const imprints: Buffer[] = [];
  const clients: TlogClients = {
    addCheckpoint: (_w, req) => w.add(req),
    timestamp: async (url, data) => {
      t.equal(url, 'http://tsa.example/tsr');
      if (tsaDown-- > 0) throw new Error('503');
      imprints.push(sha(data));
      return Buffer.concat([Buffer.from('TSR:'), sha(data)]);
    },
  };
  const yaml = `witnesses:\n  - {name: ${w.name}, url: "http://127.0.0.1:9/w", key: "${w.vkey}"}\ntsa_url: http://tsa.example/tsr\n${TWO_ARCHIVES}`;
  const a = await startArchive(yaml, { server: { tlogClients: clients } });
  t.teardown(() => a.close());
  const get = (p: string) => request(`${a.url}/2025/${p}`);
  const put = (i: number) => {
    const u = `http://www.example.org/t${i}`;
    return putCapture(a, u, captureRecord({ ...partsOf(u), date: `Mon, 01 Jan 2001 00:00:0${i} GMT` }));
  };
  await put(0);
  await put(1);
  // The publisher may first publish the empty log (size 0) or size 1, when the authority answers before both captures are in: wait for both.
  const first = await until('published at size 2', async () => {
    const r = await get('tlog/checkpoint');
    return r.status === 200 && Number(r.text.split('\n')[1]) === 2 ? r.text : undefined;
  });
  const size = Number(first.split('\n')[1]);
  t.equal(size, 2, 'published over both captures once the authority answered');
  const text = first.slice(0, first.indexOf('\n\n') + 1);
  const tsr = await get('tlog/checkpoint.tsr');
  t.equal(tsr.status, 200);
  t.equal(tsr.headers['content-type'], 'application/timestamp-reply');
  t.same(tsr.body, Buffer.concat([Buffer.from('TSR:'), sha(text)]), "the token over the checkpoint's note text");
  // The witness forgets nothing, the log's view of it is wrong: it last cosigned `size`, the log is told it cosigned 0.
  w.size = size;
  w.root = Buffer.from(first.split('\n')[2], 'base64');
  await put(2);
  await put(3);
  const later = await until('published again', async () => {
    const r = await get('tlog/checkpoint');
    return r.status === 200 && Number(r.text.split('\n')[1]) === 4 ? r.text : undefined;
  });
  t.equal(w.size, 4, 'the witness checked the proof from its size and cosigned');
  t.same(signers(later), [later.split('\n')[0], 'w.example/w']);
  const receipt = await get('receipt/20010101000003/http://www.example.org/t3');
  const line = receipt.text.trimEnd().split('\n').pop()!;
  const m = /^— (\S+) (\S+)$/.exec(line)!;
  t.equal(m[1], 'tsa.example/tsr', "the receipt's last line: the time-stamp, named by the authority's URL");
  const raw = Buffer.from(m[2], 'base64');
  t.same(
    raw.subarray(0, 4),
    sha('tsa.example/tsr\n', Buffer.of(0xff), 'rfc3161-timestamp-response').subarray(0, 4),
    'its key ID: type 0xff and the identifier',
  );
  t.same(raw.subarray(4), Buffer.concat([Buffer.from('TSR:'), sha(later.slice(0, later.indexOf('\n\n') + 1))]), 'then the DER time-stamp response');
  t.ok(imprints.length >= 2);
});

/** Runs SQL on an archive's SQLite index beside the daemon (what someone with write access to the database alone can do). */
async function sql(dataDir: string, text: string): Promise<void> {
  const db = new sqlite3.Database(path.join(dataDir, 'index.sqlite3'));
  await new Promise<void>((resolve, reject) => db.exec(`PRAGMA busy_timeout = 5000; ${text}`, (err) => (err ? reject(err) : resolve())));
  await new Promise<void>((r) => db.close(() => r()));
}

/** Deletes the newest entries of archive 2025 from `keep` on, with their mementos, nodes, heads and checkpoints: a cut-back log. */
const CUT = (keep: number) => `
  DELETE FROM memento WHERE id IN (SELECT id FROM memento WHERE archive_id = '2025' ORDER BY id LIMIT -1 OFFSET ${keep});
  DELETE FROM log_leaf WHERE archive_id = '2025' AND leaf_index >= ${keep};
  DELETE FROM log_node WHERE archive_id = '2025' AND (idx + 1) * (1 << level) > ${keep};
  DELETE FROM log_head WHERE archive_id = '2025' AND tree_size > ${keep};
  DELETE FROM log_checkpoint WHERE archive_id = '2025';`;

t.test('a log cut back in the database is refused: at start in one line, while running unhealthy and signing nothing', async (t) => {
  const a = await startArchive();
  const put = (x: { url: string }, i: number) => {
    const u = `http://www.example.org/c${i}`;
    return putCapture(x, u, captureRecord({ ...partsOf(u), date: `Mon, 01 Jan 2001 00:00:0${i} GMT`, body: `c${i}` }));
  };
  for (let i = 0; i < 3; i++) t.equal((await put(a, i)).status, 201);
  await until('published 3', async () => ((await request(`${a.url}/2025/tlog/checkpoint`)).text.split('\n')[1] === '3' ? true : undefined));
  const anchorFile = path.join(a.dataDir, 'log-signing-key.pem.checkpoints', '2025');
  t.match(readFileSync(anchorFile, 'utf8'), /^127\.0\.0\.1:\d+\/2025\n3\n/, 'the anchor beside the key: the last published checkpoint');
  const second = (await a.store.index.rowAt('2025', exactUrlkey('http://www.example.org/c1'), Date.parse('2001-01-01T00:00:01Z') / 1000))!;
  await a.close(true);
  t.teardown(() => rmSync(a.dataDir, { recursive: true, force: true }));
  // The newest mementos and entries gone from the database, and their records from the WARC file (else crash recovery indexes them again).
  await sql(a.dataDir, CUT(1));
  truncateSync(path.join(a.dataDir, 'warcs', second.warc_file), second.warc_offset);
  const err = await startArchive(undefined, { dataDir: a.dataDir }).then(
    async (b) => {
      await b.close(true);
      return undefined;
    },
    (e: Error) => e,
  );
  t.type(err, LogAnchorError, 'the daemon does not start');
  t.equal(
    err?.message,
    `evidence log of archive 2025: the database holds 1 entries, fewer than the 3 of its last published checkpoint (${path.dirname(anchorFile)}): the log was cut back; not signing`,
  );
  t.notMatch(err?.message ?? '', /\n/, 'one line');

  const b = await startArchive();
  t.teardown(() => b.close());
  for (let i = 0; i < 3; i++) await put(b, i);
  await until('published 3', async () => ((await request(`${b.url}/2025/tlog/checkpoint`)).text.split('\n')[1] === '3' ? true : undefined));
  t.equal((await request(`${b.url}/healthz`)).status, 200);
  await sql(b.dataDir, CUT(2));
  t.equal((await put(b, 5)).status, 201, 'a capture still goes in (entry 2 again, another one)');
  const health = await until('unhealthy', async () => {
    const r = await request(`${b.url}/healthz`);
    return r.status === 503 ? r.text : undefined;
  });
  t.match(
    health,
    /evidence log of archive 2025: its first 3 entries do not have the root of its last published checkpoint .*: the log was rewritten; not signing/,
  );
  t.equal((await request(`${b.url}/2025/log?tree_size=3`)).status, 404, 'no head is signed over the rewritten log');
  const proof = await request(`${b.url}/2025/proof/20010101000005/http://www.example.org/c5`);
  t.equal(proof.status, 500, 'nor for a proof');
  t.match(proof.text, /the log was rewritten; not signing/);
  t.equal((await request(`${b.url}/2025/tlog/checkpoint`)).status, 404, 'the checkpoints the database lost are not served again');
});

t.test('a head signed before heads named their log still verifies, and says so (origin null)', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const key = (await import('../../../archive/evidence/signing-key.js')).openSigningKey(a.config.signingKeyFile);
  const root = mthOfHashes([]);
  // An old head at size 0 of archive "current", signed over the three lines alone (as before).
  await sql(a.dataDir, `DELETE FROM log_head WHERE archive_id = 'current'`);
  const ts = 1_700_000_000_000;
  const sig = key.sign(`0\n${root.toString('base64')}\n${ts}`);
  await sql(a.dataDir, `INSERT INTO log_head VALUES ('current', 0, x'${root.toString('hex')}', ${ts}, x'${sig.toString('hex')}', NULL)`);
  const h = JSON.parse((await request(`${a.url}/current/log?tree_size=0`)).text);
  t.equal(h.origin, null, 'origin null: the signature covers <tree_size>\\n<root_hash>\\n<timestamp>');
  const { verify: verifyArchive } = await import('../../../archive/store/upkeep/maintenance.js');
  const r = await verifyArchive(a.store.index, a.store.warcs, { publicKeyDer: key.publicKeyDer });
  t.same(r.problems, [], 'verify checks it with the old text');
  t.equal(r.ok, true);
});

t.test('the settings: witnesses {name, url, key}, witness_quorum, tsa_url; a mistake is one line with its place', async (t) => {
  const w = standInWitness('w.example/w');
  const other = standInWitness('x.example/x');
  const check = (yaml: string) => validateArchiveConfig(parseYamlText(`${yaml}${TWO_ARCHIVES}`, '/etc/archive.yaml'));
  const ok = check(`witnesses:\n  - {name: ${w.name}, url: "https://w.example/tlog/", key: "${w.vkey}"}\ntsa_url: https://tsa.example/tsr\n`);
  t.same(
    ok.witnesses.map((x) => [x.name, x.url, x.key.type]),
    [[w.name, 'https://w.example/tlog', 4]],
    'the URL without its trailing slash, the key parsed',
  );
  t.equal(ok.witnessQuorum, 1, 'the quorum: every witness listed');
  t.equal(ok.tsaUrl, 'https://tsa.example/tsr');
  t.equal(check('').witnessQuorum, 0, 'no witnesses, no quorum');
  const logKey = formatVerifierKey(verifierKeyOf('a.example/current', generateKeyPairSync('ed25519').privateKey));
  const cases: [string, RegExp][] = [
    [
      `witnesses:\n  - {name: ${w.name}, url: "https://w.example", key: "${other.vkey}"}\n`,
      /^\/etc\/archive\.yaml:2: witness name w\.example\/w is not the name in its key \(x\.example\/x\)$/,
    ],
    [
      `witnesses:\n  - {name: ${w.name}, url: "https://w.example", key: "${w.vkey}"}\nwitness_quorum: 2\n`,
      /:3: witness_quorum 2 is more than the 1 witness\(es\) listed/,
    ],
    [
      `witnesses:\n  - {name: a.example/current, url: "https://w.example", key: "${logKey}"}\n`,
      /:2: a witness key is a signed-note verifier key of an Ed25519 cosigner/,
    ],
    [`witnesses:\n  - {name: ${w.name}, url: "ftp://w.example", key: "${w.vkey}"}\n`, /a witness url is an http\(s\) URL prefix/],
    [
      `witnesses:\n  - {name: ${w.name}, url: "https://w.example", key: "${w.vkey}"}\n  - {name: ${w.name}, url: "https://v.example", key: "${w.vkey}"}\n`,
      /:3: witness w\.example\/w is listed twice/,
    ],
    ['tsa_url: tsa.example\n', /tsa_url: must be the http\(s\) URL of an RFC 3161 time-stamping authority|tsa_url must be the http/],
    ['base_url: https://a.example/x+y\n', /base_url's path holds a "\+"/],
  ];
  for (const [yaml, msg] of cases) {
    const err = (() => {
      try {
        check(yaml);
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    t.ok(err instanceof ConfigError, yaml.split('\n')[0]);
    t.match(err?.message, msg);
    t.notMatch(err?.message ?? '', /\n/, 'one line');
  }
});
