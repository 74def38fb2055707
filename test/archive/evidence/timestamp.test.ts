/**
 * RFC 3161 timestamps (archive/evidence/timestamp.ts) with a real TSA:
 * `openssl ts -reply` behind a local server (test/helpers/tsa.ts). A token
 * asked for checks, and `openssl ts -verify` agrees; a token over other
 * data, for another request, signed by an untrusted TSA, a certificate not
 * made for timestamping, with a changed byte, a refusal, or bytes that are
 * not a token, is refused with one line.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import t from 'tap';
import { checkTimestamp, requestTimestamp, TimestampError } from '../../../archive/evidence/timestamp.js';
import { makeTsaPki, startTsa } from '../../helpers/tsa.js';

const run = promisify(execFile);
const data = Buffer.from('archive.example.org/current\n5\nCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=\n');

t.test('a token from the TSA checks against its CA, and openssl ts -verify agrees', async (t) => {
  const tsa = await startTsa();
  t.teardown(() => tsa.close());
  const before = Date.now();
  const der = await requestTimestamp(tsa.url, data, { trustedCertsPem: tsa.caPem });
  const info = await checkTimestamp(der, data, { trustedCertsPem: tsa.caPem });
  t.ok(
    info.genTime.getTime() >= Math.floor(before / 1000) * 1000 - 1000 && info.genTime.getTime() <= Date.now() + 1000,
    `genTime ${info.genTime.toISOString()} is now`,
  );
  t.match(info.serial, /^[0-9a-f]+$/);
  t.equal(info.tsaName, 'O=Test, CN=Test TSA');
  t.equal(info.signer, 'O=Test, CN=Test TSA');
  t.equal(info.policy, '1.2.3.4.1');
  t.equal(tsa.answered(), 1);
  writeFileSync(path.join(tsa.dir, 'data'), data);
  writeFileSync(path.join(tsa.dir, 'resp.der'), der);
  const verified = await run('openssl', ['ts', '-verify', '-in', path.join(tsa.dir, 'resp.der'), '-data', path.join(tsa.dir, 'data'), '-CAfile', tsa.caFile]);
  t.match(verified.stdout, /Verification: OK/);
  const text = await run('openssl', ['ts', '-reply', '-in', path.join(tsa.dir, 'resp.der'), '-text']);
  t.match(text.stdout, new RegExp(createHash('sha256').update(data).digest('hex').slice(0, 2)), 'openssl reads the imprint');
  t.match(text.stdout, /Nonce: 0x[0-9A-F]+/, 'the request had a nonce');
});

t.test('what does not check is refused with a one-line reason', async (t) => {
  const tsa = await startTsa();
  t.teardown(() => tsa.close());
  const der = await requestTimestamp(tsa.url, data);
  const other = await makeTsaPki({ caName: 'Another CA' });
  t.teardown(() => run('rm', ['-rf', other.dir]));
  const cases: [string, () => Promise<unknown>, RegExp][] = [
    ['other data', () => checkTimestamp(der, Buffer.from('other\n')), /over other data/],
    ['another nonce', () => checkTimestamp(der, data, { nonce: 12345n }), /nonce differs/],
    ['an untrusted CA', () => checkTimestamp(der, data, { trustedCertsPem: other.caPem }), /certificate does not chain to the trusted certificates/],
    ['no certificate in the PEM', () => checkTimestamp(der, data, { trustedCertsPem: 'nothing' }), /no PEM certificate/],
    ['the last byte (the signature) changed', () => checkTimestamp(flip(der, der.length - 1), data), /signature/],
    ['genTime changed', () => checkTimestamp(changeGenTime(der), data), /signature|digest/i],
    ['garbage', () => checkTimestamp(Buffer.from('not a token'), data), /not DER|not well formed/],
    ['bytes after the end', () => checkTimestamp(Buffer.concat([der, Buffer.of(0)]), data), /1 bytes after its end/],
    ['too large', () => checkTimestamp(Buffer.alloc(70_000), data), /70000 bytes \(at most 65536\)/],
    ['a refusal', () => checkTimestamp(rejection(), data), /did not grant a timestamp \(status 2: no policy\)/],
  ];
  for (const [what, p, reason] of cases) {
    const err = await p().then(
      () => undefined,
      (e: unknown) => e,
    );
    t.type(err, TimestampError, what);
    t.match((err as Error).message, reason, what);
    t.notMatch((err as Error).message, /\n/, `${what}: one line`);
  }
});

t.test('a token signed by a certificate that is not for timestamping is refused', async (t) => {
  // openssl ts will not sign with such a certificate: the TSTInfo of a real token (asked for after that
  // certificate was made, so that the certificate is valid at the token's time) is signed again with openssl cms.
  const tsa = await startTsa();
  t.teardown(() => tsa.close());
  const f = (n: string) => path.join(tsa.dir, n);
  const openssl = (...args: string[]) => run('openssl', args);
  await openssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    f('plain.key'),
    '-out',
    f('plain.csr'),
    '-subj',
    '/CN=Not a TSA',
  );
  writeFileSync(f('plain.cnf'), 'basicConstraints=CA:FALSE\nextendedKeyUsage=codeSigning\n');
  await openssl(
    'x509',
    '-req',
    '-in',
    f('plain.csr'),
    '-CA',
    tsa.caFile,
    '-CAkey',
    f('ca.key'),
    '-out',
    f('plain.crt'),
    '-days',
    '2',
    '-extfile',
    f('plain.cnf'),
  );
  const der = await requestTimestamp(tsa.url, data);
  const signed = new pkijs.SignedData({ schema: pkijs.TimeStampResp.fromBER(new Uint8Array(der)).timeStampToken!.content });
  writeFileSync(f('tstinfo.der'), Buffer.from(signed.encapContentInfo.eContent!.getValue()));
  const econtent = ['-econtent_type', '1.2.840.113549.1.9.16.1.4'];
  await openssl(
    'cms',
    '-sign',
    '-binary',
    '-nodetach',
    '-in',
    f('tstinfo.der'),
    ...econtent,
    '-signer',
    f('plain.crt'),
    '-inkey',
    f('plain.key'),
    '-md',
    'sha256',
    '-outform',
    'DER',
    '-out',
    f('token.der'),
    '-nosmimecap',
  );
  const token = asn1js.fromBER(new Uint8Array(readFileSync(f('token.der')))).result;
  const resp = new asn1js.Sequence({ value: [new pkijs.PKIStatusInfo({ status: pkijs.PKIStatus.granted }).toSchema(), token] });
  const forged = Buffer.from(resp.toBER());
  await t.rejects(checkTimestamp(forged, data, { trustedCertsPem: tsa.caPem }), {
    name: 'TimestampError',
    message: /CN=Not a TSA\) is not a certificate for timestamping only/,
  });
});

t.test('requestTimestamp refuses an answer to another request, an error status, and an unreachable TSA', async (t) => {
  const tsa = await startTsa();
  t.teardown(() => tsa.close());
  const first = await requestTimestamp(tsa.url, data);
  tsa.tamper = () => first; // a replay of an earlier answer
  await t.rejects(requestTimestamp(tsa.url, data), { name: 'TimestampError', message: /nonce differs/ });
  tsa.tamper = (der) => ({ status: 503, body: der });
  await t.rejects(requestTimestamp(tsa.url, data), { name: 'TimestampError', message: /answered 503/ });
  tsa.tamper = undefined;
  await t.rejects(requestTimestamp('http://127.0.0.1:1/', data, { timeoutMs: 2000 }), { name: 'TimestampError', message: /^TSA http:\/\/127\.0\.0\.1:1\// });
});

/** `der` with the byte at `i` changed. */
function flip(der: Buffer, i: number): Buffer {
  const out = Buffer.from(der);
  out[i] ^= 0x01;
  return out;
}

/** `der` with the last digit of the seconds of its GeneralizedTime (`…Z`) changed. */
function changeGenTime(der: Buffer): Buffer {
  const s = der.toString('latin1');
  // eslint-disable-next-line no-control-regex
  const m = /\x18\x0f(\d{14})Z/.exec(s);
  if (!m) throw new Error('no GeneralizedTime in the token');
  const at = m.index + 2 + 13;
  const out = Buffer.from(der);
  out[at] = out[at] === 0x30 ? 0x31 : 0x30;
  return out;
}

/** A TimeStampResp with status rejection (2) and a reason. */
function rejection(): Buffer {
  const status = new pkijs.PKIStatusInfo({ status: pkijs.PKIStatus.rejection, statusStrings: [new asn1js.Utf8String({ value: 'no policy' })] });
  return Buffer.from(new pkijs.TimeStampResp({ status }).toSchema().toBER());
}
