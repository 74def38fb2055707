/**
 * The witness client (archive/evidence/witness-client.ts) against a
 * scripted witness on 127.0.0.1: the request it sends is the tlog-witness
 * add-checkpoint body, it keeps only the cosignatures of the witness's key
 * that verify, and every refusal or misbehaviour of the witness (409 with
 * its size, other statuses, forged or missing cosignatures, an endless or
 * oversized answer, a redirect) is a WitnessError that says so.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import {
  checkpointText,
  cosignatureLine,
  noteSignerOf,
  parseNote,
  SIG_COSIGNATURE_V1,
  signNote,
  verifierKeyOf,
  verifyNote,
} from '../../../archive/evidence/signed-note.js';
import { addCheckpoint, WitnessError, type WitnessEndpoint } from '../../../archive/evidence/witness-client.js';

const log = noteSignerOf('archive.example.org/current', generateKeyPairSync('ed25519').privateKey);
const witnessSigner = noteSignerOf('witness.example/w1', generateKeyPairSync('ed25519').privateKey);
const otherSigner = noteSignerOf('witness.example/w2', generateKeyPairSync('ed25519').privateKey);
const text = checkpointText({ origin: log.name, treeSize: 5, rootHash: Buffer.alloc(32, 9) });
const note = signNote(text, log);
const proof = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

/** A witness on 127.0.0.1 port 0 that answers by `handler`; `received` are the bodies it got. */
async function scriptedWitness(t: Test, handler: Handler): Promise<{ endpoint: WitnessEndpoint; received: { url: string; body: string }[] }> {
  const received: { url: string; body: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ url: `${req.method} ${req.url}`, body });
      handler(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: { name: 'w1', url: `http://127.0.0.1:${port}/witness/`, key: verifierKeyOf(witnessSigner.name, witnessSigner.privateKey, SIG_COSIGNATURE_V1) },
    received,
  };
}

t.test('a 200: the request is the tlog-witness body; only the verifying cosignature of the witness key is kept', async (t) => {
  const { endpoint, received } = await scriptedWitness(t, (_req, _body, res) => {
    res.end(cosignatureLine(text, otherSigner, 1_700_000_001) + cosignatureLine(text, witnessSigner, 1_700_000_000));
  });
  const lines = await addCheckpoint(endpoint, { oldSize: 3, proof, note });
  t.same(received, [{ url: 'POST /witness/add-checkpoint', body: `old 3\n${proof[0].toString('base64')}\n${proof[1].toString('base64')}\n\n${note}` }]);
  t.equal(lines.length, 1);
  t.match(lines[0], /^— witness\.example\/w1 [A-Za-z0-9+/=]+\n$/);
  const cosigned = parseNote(note + lines.join(''));
  t.same(
    verifyNote(cosigned, [verifierKeyOf(log.name, log.privateKey), endpoint.key]).verified.map((v) => v.name),
    [log.name, witnessSigner.name],
    'the note with the kept line verifies with the log key and the witness key',
  );
});

t.test('a first submission: old 0 and no proof lines', async (t) => {
  const { endpoint, received } = await scriptedWitness(t, (_req, _body, res) => res.end(cosignatureLine(text, witnessSigner, 1)));
  t.equal((await addCheckpoint(endpoint, { oldSize: 0, proof: [], note })).length, 1);
  t.equal(received[0].body, `old 0\n\n${note}`);
});

t.test('409 gives the size the witness recorded', async (t) => {
  const { endpoint } = await scriptedWitness(t, (_req, _body, res) => {
    res.writeHead(409, { 'content-type': 'text/x.tlog.size' }).end('17\n');
  });
  const err = await addCheckpoint(endpoint, { oldSize: 3, proof, note }).catch((e: unknown) => e);
  t.type(err, WitnessError);
  t.match(err, { status: 409, recordedSize: 17, message: /last cosigned size 17, not 3/ });
});

t.test('a 409 without a size, and other refusals, keep their status and a one-line reason', async (t) => {
  const answers: [number, string, string][] = [
    [409, 'text/plain', 'conflict\n'],
    [403, 'text/plain', 'no trusted signature\nsecond line'],
    [404, 'text/plain', 'unknown log'],
    [422, 'text/plain', ''],
    [302, 'text/plain', ''],
    [500, 'text/plain', '\u0000\u001b[31mred'],
  ];
  let i = 0;
  const { endpoint, received } = await scriptedWitness(t, (_req, _body, res) => {
    const [status, type, body] = answers[i++];
    res.writeHead(status, { 'content-type': type, ...(status === 302 ? { location: 'http://127.0.0.1:1/elsewhere' } : {}) }).end(body);
  });
  for (const [status] of answers) {
    const err = (await addCheckpoint(endpoint, { oldSize: 3, proof, note }).catch((e: unknown) => e)) as WitnessError;
    t.type(err, WitnessError);
    t.equal(err.status, status, `status ${status}`);
    t.equal(err.recordedSize, undefined);
    // eslint-disable-next-line no-control-regex
    t.notMatch(err.message, /[\n\u0000\u001b]/, `${status}: one line, no control characters: ${err.message}`);
  }
  t.equal(received.length, answers.length, 'the redirect was not followed');
});

t.test('a 200 without a verifying cosignature of the witness key is refused', async (t) => {
  const bodies = [
    cosignatureLine(text, otherSigner, 5), // another key only
    cosignatureLine(checkpointText({ origin: log.name, treeSize: 4, rootHash: Buffer.alloc(32, 9) }), witnessSigner, 5), // over another checkpoint
    cosignatureLine(text, witnessSigner, 0), // timestamp 0
    'not a signature line\n',
    '',
    `${cosignatureLine(text, witnessSigner, 5)}trailing`,
  ];
  let i = 0;
  const { endpoint } = await scriptedWitness(t, (_req, _body, res) => res.end(bodies[i++]));
  const reasons = [/no cosignature by its key/, /does not verify/, /timestamp 0/, /not signature lines/, /not signature lines/, /not signature lines/];
  for (const reason of reasons) {
    const err = await addCheckpoint(endpoint, { oldSize: 3, proof, note }).catch((e: unknown) => e);
    t.type(err, WitnessError);
    t.match(err, { status: 200, message: reason });
  }
});

t.test('an oversized or endless answer is cut off', async (t) => {
  let mode = 'big';
  const { endpoint } = await scriptedWitness(t, (_req, _body, res) => {
    if (mode === 'big') {
      res.writeHead(200);
      res.write(Buffer.alloc(40_000, 0x41));
      res.end(Buffer.alloc(40_000, 0x41));
    } else res.writeHead(200).write('— '); // and never ends
  });
  await t.rejects(addCheckpoint(endpoint, { oldSize: 3, proof, note }), { name: 'WitnessError', message: /over 65536 bytes/ });
  mode = 'slow';
  const started = Date.now();
  await t.rejects(addCheckpoint(endpoint, { oldSize: 3, proof, note }, { timeoutMs: 300 }), { name: 'WitnessError', message: /no answer within 300 ms/ });
  t.ok(Date.now() - started < 5000, 'the time limit holds');
});

t.test('an unreachable witness, and a request that cannot be right, are WitnessErrors without a status', async (t) => {
  const { endpoint, received } = await scriptedWitness(t, (_req, _body, res) => res.end());
  const closed = { ...endpoint, url: 'http://127.0.0.1:1' };
  const e1 = (await addCheckpoint(closed, { oldSize: 0, proof: [], note }).catch((e: unknown) => e)) as WitnessError;
  t.type(e1, WitnessError);
  t.equal(e1.status, undefined);
  const bad = [
    { oldSize: 6, proof, note }, // old > new
    { oldSize: 3, proof: Array.from({ length: 64 }, () => Buffer.alloc(32)), note },
    { oldSize: 3, proof: [Buffer.alloc(31)], note },
    { oldSize: -1, proof: [], note },
    { oldSize: 0, proof: [], note: text }, // unsigned
  ];
  for (const req of bad) await t.rejects(addCheckpoint(endpoint, req), { name: 'WitnessError', message: /not sent/ });
  await t.rejects(addCheckpoint({ ...endpoint, key: verifierKeyOf(witnessSigner.name, witnessSigner.privateKey) }, { oldSize: 0, proof: [], note }), {
    message: /not a cosignature key/,
  });
  t.equal(received.length, 0, 'nothing was sent');
});
