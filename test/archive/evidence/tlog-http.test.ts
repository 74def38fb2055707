/**
 * The evidence log in the C2SP formats over HTTP (docs/evidence.md): the
 * checkpoint is a signed note of the log's origin with the signed-note
 * key ID, served with a short cache lifetime; tiles hold the tree's
 * hashes (level 0 the leaf hashes, level 1 the roots of full level-0
 * tiles), partial tiles of any width up to the tree's stay served and
 * others are 404; entry bundles hold the entries' texts (a hidden
 * memento's slot empty); a memento links its receipt, and the receipt
 * proves its entry into the published checkpoint. Checked with
 * node:crypto and test/helpers/rfc9162.ts, not the archive's code.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import t from 'tap';
import { toTimestamp14 } from '#shared/http-date.js';
import { captureLeafText } from '../../../archive/evidence/leaf.js';
import type { NewLeaf } from '../../../archive/evidence/log.js';
import { partsOf, ts14 } from '../../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { indexRowOf } from '../../helpers/index-rows.js';
import * as c2sp from '../../helpers/c2sp-verifier.js';
import { leafHash, mthOfHashes, nodeHash, verifyInclusion } from '../../helpers/rfc9162.js';

const sha = (...parts: (Buffer | string)[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

/** Polls `url` until it answers 200 and `ok(body)`; fails after 15 s. */
async function until(url: string, ok: (text: string) => boolean = () => true): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await request(url);
    if (r.status === 200 && ok(r.text)) return r.text;
    if (Date.now() > deadline) throw new Error(`${url}: ${r.status} ${r.text.slice(0, 200)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** A checkpoint note read by hand: its text lines and signature lines (name, key ID, signature). */
function readNote(note: string) {
  const split = note.lastIndexOf('\n\n');
  const text = note.slice(0, split + 1);
  const [origin, size, root] = text.split('\n');
  const sigs = note
    .slice(split + 2)
    .trimEnd()
    .split('\n')
    .map((l) => {
      const m = /^— (\S+) (\S+)$/.exec(l)!;
      const raw = Buffer.from(m[2], 'base64');
      return { name: m[1], keyId: raw.subarray(0, 4), sig: raw.subarray(4) };
    });
  return { text, origin, size: Number(size), root: Buffer.from(root, 'base64'), sigs };
}

/** The archive's Ed25519 public key, from its /log head (SPKI DER base64). */
async function publicKeyOf(a: TestArchive, archive: string) {
  return JSON.parse((await request(`${a.url}/${archive}/log`)).text).public_key as string;
}

/** The log's verifier key (C2SP signed-note vkey, type 0x01) of `origin`, made by hand from the key /log gives. */
async function vkeyOf(a: TestArchive, archive: string, origin: string): Promise<string> {
  const der = Buffer.from(await publicKeyOf(a, archive), 'base64');
  const material = Buffer.concat([Buffer.of(1), der.subarray(der.length - 32)]);
  return `${origin}+${sha(`${origin}\n`, material).subarray(0, 4).toString('hex')}+${material.toString('base64')}`;
}

/** Checks a checkpoint note's log signature as signed-note says, with the key given: key ID = SHA-256(origin ‖ \n ‖ 0x01 ‖ key)[:4]. */
function logSigned(note: string, publicKeyB64: string): boolean {
  const n = readNote(note);
  const der = Buffer.from(publicKeyB64, 'base64');
  const raw = der.subarray(der.length - 32);
  const keyId = sha(`${n.origin}\n`, Buffer.of(1), raw).subarray(0, 4);
  const line = n.sigs.find((s) => s.name === n.origin && s.keyId.equals(keyId));
  if (!line) return false;
  return verify(null, Buffer.from(n.text), createPublicKey({ key: der, format: 'der', type: 'spki' }), line.sig);
}

t.test('the checkpoint: a signed note naming the log, short-lived in caches, consistent with /log', async (t) => {
  const a = await startArchive(`base_url: https://archive.example.org/\n${TWO_ARCHIVES}`);
  t.teardown(() => a.close());
  for (const [i, date] of ['Mon, 01 Jan 2001 00:00:00 GMT', 'Tue, 02 Jan 2001 00:00:00 GMT'].entries()) {
    const u = `http://www.example.org/p${i}`;
    t.equal((await putCapture(a, u, captureRecord({ ...partsOf(u), date }))).status, 201);
  }
  const note = await until(`${a.url}/2025/tlog/checkpoint`, (s) => s.split('\n')[1] === '2');
  const r = await request(`${a.url}/2025/tlog/checkpoint`);
  t.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
  const maxAge = Number(/max-age=(\d+)/.exec(String(r.headers['cache-control']))?.[1]);
  t.ok(maxAge <= 10, `Cache-Control ${r.headers['cache-control']}: max-age at most 10 s`);
  t.notMatch(String(r.headers['cache-control']), /immutable/);
  const n = readNote(note);
  t.equal(n.origin, 'archive.example.org/2025', 'origin: base_url host and path (none here), then the archive id');
  t.equal(n.sigs[0].name, 'archive.example.org/2025', "the log's key name is the origin");
  const key = await publicKeyOf(a, '2025');
  t.ok(logSigned(note, key), "the log's signature verifies, its key ID as signed-note defines it");
  t.notOk(logSigned(note.replace('\n2\n', '\n3\n'), key), 'another size does not');
  const head = JSON.parse((await request(`${a.url}/2025/log?tree_size=2`)).text);
  t.equal(n.root.toString('base64'), head.root_hash, 'the same root as the JSON head of that size');
  const other = readNote(await until(`${a.url}/current/tlog/checkpoint`));
  t.equal(other.origin, 'archive.example.org/current');
  t.equal(other.size, 0, 'an empty log has a checkpoint of size 0');
  t.same(other.root, sha(), 'with the empty root');
  t.equal((await request(`${a.url}/2025/tlog/checkpoint.tsr`)).status, 404, 'no time-stamp without tsa_url');
  t.equal((await request(`${a.url}/nosuch/tlog/checkpoint`)).status, 404);
});

t.test('tiles and entry bundles: the tree as C2SP tlog-tiles, 404 beyond it, 400 for a path of another form', async (t) => {
  const a = await startArchive(`${TWO_ARCHIVES}access:\n  - url: http://www.example.org/hidden/*\n    action: exclude\n`);
  t.teardown(() => a.close());
  const N = 2 * 256 + 5;
  const rows = Array.from({ length: N }, (_, i) => indexRowOf('2025', `http://www.example.org/${i === 300 ? 'hidden/' : ''}e${i}`, 978_307_200 + i));
  const leaves: NewLeaf[] = rows.map((r, i) => ({
    archive_id: '2025',
    kind: 'capture',
    text: captureLeafText({
      uri: r.uri_r,
      datetime: toTimestamp14(r.datetime),
      record_id: `<urn:uuid:00000000-0000-0000-0000-${String(i).padStart(12, '0')}>`,
      digest: `sha256:${sha(String(i)).toString('hex')}`,
    }),
    urlkey: r.urlkey,
    datetime: r.datetime,
  }));
  await a.store.index.insertMany(rows, { leaves });
  const texts = leaves.map((l) => Buffer.from(l.text));
  const hashes = texts.map((x) => leafHash(x));
  const get = (p: string) => request(`${a.url}/2025/tlog/tile/${p}`);

  const t0 = await get('0/000');
  t.equal(t0.status, 200);
  t.equal(t0.headers['content-type'], 'application/octet-stream');
  t.match(t0.headers['cache-control'], /immutable|max-age=(\d{5,}|[4-9]\d{3})/, 'long-lived');
  t.same(t0.body, Buffer.concat(hashes.slice(0, 256)), 'level 0 tile 0: the leaf hashes of entries 0-255');
  t.same((await get('0/001')).body, Buffer.concat(hashes.slice(256, 512)));
  t.same((await get('0/002.p/5')).body, Buffer.concat(hashes.slice(512, 517)), 'the partial tile of the tree');
  t.same((await get('0/002.p/3')).body, Buffer.concat(hashes.slice(512, 515)), 'a narrower partial tile stays served');
  const l1 = await get('1/000.p/2');
  t.same(l1.body, Buffer.concat([mthOfHashes(hashes.slice(0, 256)), mthOfHashes(hashes.slice(256, 512))]), 'level 1: roots of the full level-0 tiles');
  // The root from the tiles alone: MTH(D[0:512]) from the level-1 tile's two hashes, MTH(D[512:517]) from the partial level-0 tile.
  const partial = (await get('0/002.p/5')).body;
  const fromTiles = nodeHash(
    nodeHash(l1.body.subarray(0, 32), l1.body.subarray(32, 64)),
    mthOfHashes(Array.from({ length: 5 }, (_, i) => partial.subarray(32 * i, 32 * i + 32))),
  );
  const cp = readNote(await until(`${a.url}/2025/tlog/checkpoint`, (s) => s.split('\n')[1] === String(N)));
  t.same(fromTiles, cp.root, "the tiles give the published checkpoint's root");
  t.same(mthOfHashes(hashes), cp.root, 'which is MTH of the entries');
  // The independent verifier (test/helpers/c2sp-verifier.ts, from the specs alone) mirrors the log from its tiles.
  const prefix = `${a.url}/2025/tlog`;
  t.same(await c2sp.rootFromTiles(prefix, N), cp.root, 'c2sp-verifier: tiles → root');
  t.same(await c2sp.leafHashesFromTiles(prefix, N, cp.root), hashes, 'c2sp-verifier: every leaf hash, the full tiles against level 1');
  const read = await c2sp.fetchEntryBundle(prefix, 1, N);
  t.same(
    read.map((e) => e.erased),
    Array.from({ length: 256 }, (_, i) => i === 300 - 256),
    'c2sp-verifier: entry bundle → leaf hashes (the hidden one an empty slot)',
  );
  t.same(
    (await c2sp.fetchEntryBundle(prefix, 2, N)).map((e) => e.entry.toString()),
    leaves.slice(512).map((l) => l.text),
    'and the partial bundle',
  );
  const logVk = c2sp.parseVkey(await vkeyOf(a, '2025', cp.origin));
  t.equal(c2sp.verifyCheckpoint(await until(`${a.url}/2025/tlog/checkpoint`), logVk, [], cp.origin).size, N, 'c2sp-verifier: the signed note');

  const bundle = (await get('entries/001')).body;
  const slots: Buffer[] = [];
  for (let at = 0; at < bundle.length;) {
    const len = bundle.readUInt16BE(at);
    slots.push(bundle.subarray(at + 2, at + 2 + len));
    at += 2 + len;
  }
  t.equal(slots.length, 256, 'a full bundle holds 256 entries');
  t.equal(slots[300 - 256].length, 0, 'a memento the access rules hide has an empty slot');
  for (const [i, s] of slots.entries()) if (i !== 44 && !leafHash(s).equals(hashes[256 + i])) t.fail(`entry ${256 + i} hashes to its tile's leaf hash`);
  t.ok(
    slots.every((s, i) => i === 44 || s.equals(texts[256 + i])),
    'every other slot is the entry text',
  );
  t.match((await get('entries/002.p/5')).headers['cache-control'], /max-age=\d{4,}/);

  for (const p of ['0/002', '0/002.p/6', '0/003', '1/000', '2/000.p/1', 'entries/002', 'entries/003.p/1'])
    t.equal((await get(p)).status, 404, `${p}: beyond the tree`);
  for (const p of ['0/0', '0/x000/001', '0/1000', '64/000', '00/000', '0/000.p/0', '0/000.p/256', 'x/000', '0/000/'])
    t.equal((await get(p)).status, 400, `${p}: not a tile path`);
});

t.test('a memento links its receipt; the receipt proves its entry into the published checkpoint, offline', async (t) => {
  const a = await startArchive(
    `${TWO_ARCHIVES}access:\n  - url: http://www.example.org/gone\n    action: exclude\n  - url: http://www.example.org/blocked\n    action: block\n`,
  );
  t.teardown(() => a.close());
  const date = 'Mon, 01 Jan 2001 00:00:00 GMT';
  for (const u of ['http://www.example.org/a', 'http://www.example.org/b', 'http://www.example.org/gone', 'http://www.example.org/blocked'])
    t.equal((await putCapture(a, u, captureRecord({ ...partsOf(u), date, body: u }))).status, 201);
  const m = await request(`${a.url}/2025/memento/${ts14(date)}/http://www.example.org/b`);
  const receiptUrl = `${a.url}/2025/receipt/${ts14(date)}/http://www.example.org/b`;
  t.match(m.headers.link, `<${receiptUrl}>; rel="describedby"; type="text/plain"`, 'the memento links its receipt');
  await until(`${a.url}/2025/tlog/checkpoint`, (s) => s.split('\n')[1] === '4');
  const r = await request(receiptUrl);
  t.equal(r.status, 200);
  t.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
  const [proofPart, note] = [r.text.slice(0, r.text.indexOf('\n\n')), r.text.slice(r.text.indexOf('\n\n') + 2)];
  const lines = proofPart.split('\n');
  t.equal(lines[0], 'c2sp.org/tlog-proof@v1');
  const leaf = Buffer.from(/^extra (.+)$/.exec(lines[1])![1], 'base64');
  const index = Number(/^index (\d+)$/.exec(lines[2])![1]);
  t.match(leaf.toString(), /^http:\/\/www\.example\.org\/b\n20010101000000\n<urn:uuid:[0-9a-f-]+>\nsha256:[0-9a-f]{64}\nvia put$/, 'extra: the entry text');
  t.equal(index, 1);
  const cp = readNote(note);
  t.ok(logSigned(note, await publicKeyOf(a, '2025')), "the receipt's checkpoint is signed by the log");
  const path = lines.slice(3).map((l) => Buffer.from(l, 'base64'));
  t.ok(verifyInclusion(leafHash(leaf), index, cp.size, path, cp.root), 'the inclusion proof takes the leaf to the checkpoint root');
  t.equal(note, await until(`${a.url}/2025/tlog/checkpoint`), 'the checkpoint as published');
  const offline = c2sp.verifyReceipt(r.text, c2sp.parseVkey(await vkeyOf(a, '2025', cp.origin)), { origin: cp.origin });
  t.same([offline.index, offline.extra], [1, leaf], 'c2sp-verifier: the receipt, offline');

  const gone = await request(`${a.url}/2025/receipt/${ts14(date)}/http://www.example.org/gone`);
  const never = await request(`${a.url}/2025/receipt/${ts14(date)}/http://www.example.org/never`);
  t.equal(gone.status, 404, 'an excluded memento has no receipt');
  t.equal(gone.text.replace('gone', 'never'), never.text, 'the answer a never-captured URL gets');
  t.equal((await request(`${a.url}/2025/receipt/${ts14(date)}/http://www.example.org/blocked`)).status, 451, 'a blocked one: 451, as the memento');
  t.equal((await request(`${a.url}/2025/receipt/20010101000001/http://www.example.org/b`)).status, 404, 'another second: no memento there');
  t.equal((await request(`${a.url}/2025/receipt/2001/http://www.example.org/b`)).status, 400, 'not 14 digits');
});
