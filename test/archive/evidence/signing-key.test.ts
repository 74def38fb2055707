import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openSigningKey, SigningKeyError, verifySignature } from '../../../archive/evidence/signing-key.js';
import { loadArchiveConfig } from '../../../archive/config.js';
import { runCli } from '../helpers.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'signing-key-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('the key is made on first use, mode 0600, and the same key is loaded again', async (t) => {
  const file = path.join(dir, 'sub', 'key.pem');
  const made = openSigningKey(file);
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.match(readFileSync(file, 'utf8'), /^-----BEGIN PRIVATE KEY-----\n/);
  t.equal(made.publicKeyDer.length, 44, 'Ed25519 SubjectPublicKeyInfo DER');
  const again = openSigningKey(file);
  t.equal(again.publicKeyBase64, made.publicKeyBase64);
  const sig = again.sign('3\nAAAA\n1700000000000');
  t.equal(sig.length, 64);
  const pub = createPublicKey({ key: Buffer.from(made.publicKeyBase64, 'base64'), format: 'der', type: 'spki' });
  t.ok(verify(null, Buffer.from('3\nAAAA\n1700000000000'), pub, sig), 'node:crypto verifies it from the base64 SPKI alone');
  t.ok(verifySignature(made.publicKeyDer, '3\nAAAA\n1700000000000', sig));
  t.notOk(verifySignature(made.publicKeyDer, '3\nAAAA\n1700000000001', sig), 'another message does not verify');
  t.notOk(verifySignature(Buffer.from('junk'), 'x', sig), 'a malformed key is false, not a throw');
});

t.test('a file that holds no Ed25519 private key is refused in one line', async (t) => {
  const rsa = path.join(dir, 'rsa.pem');
  writeFileSync(rsa, generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  t.throws(() => openSigningKey(rsa), new SigningKeyError(`${rsa}: holds a rsa key, not an Ed25519 private key`));
  const junk = path.join(dir, 'junk.pem');
  writeFileSync(junk, 'not a key', { mode: 0o600 });
  t.throws(() => openSigningKey(junk), { message: `${junk}: not a PEM or DER private key` });
  const big = path.join(dir, 'big.pem');
  writeFileSync(big, Buffer.alloc(20_000, 65));
  t.throws(() => openSigningKey(big), { message: /too large for a key file/ });
});

t.test('a key file its group or every user may read is refused in one line with the chmod to run, as a config with put_tokens is', async (t) => {
  const file = path.join(dir, 'open', 'key.pem');
  openSigningKey(file);
  for (const mode of [0o644, 0o640, 0o604]) {
    chmodSync(file, mode);
    const who = mode & 0o004 ? 'every user' : "the file's group";
    t.throws(
      () => openSigningKey(file),
      new SigningKeyError(
        `${file}: holds the evidence log’s signing key but ${who} can read it (mode 0${mode.toString(8)}); run chmod 600 ${file} (and keep it owned by the daemon's user)`,
      ),
      `mode 0${mode.toString(8)}`,
    );
  }
  chmodSync(file, 0o600);
  t.ok(openSigningKey(file), 'mode 0600: used');
  chmodSync(file, 0o400);
  t.ok(openSigningKey(file), 'mode 0400: used');
  chmodSync(file, 0o644);
  const cfg = path.join(dir, 'open', 'archive.yaml');
  writeFileSync(cfg, `listen: 127.0.0.1:0\ndata_dir: .\nsigning_key_file: key.pem\narchives:\n  - id: current\n`, { mode: 0o600 });
  const r = await runCli(['serve', '--config', cfg, '--quiet'], 30_000);
  t.not(r.code, 0, 'the daemon does not start');
  t.match(
    r.stderr,
    new RegExp(
      `${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: holds the evidence log’s signing key but every user can read it \\(mode 0644\\); run chmod 600 `,
    ),
  );
  t.notMatch(r.stdout, /listening on/);
});

t.test('signing_key_file defaults to log-signing-key.pem in data_dir, relative paths to the config file', async (t) => {
  const cfg = path.join(dir, 'archive.yaml');
  writeFileSync(cfg, 'data_dir: data\narchives:\n  - id: current\n');
  t.equal(loadArchiveConfig(cfg).signingKeyFile, path.join(dir, 'data', 'log-signing-key.pem'));
  writeFileSync(cfg, 'data_dir: data\nsigning_key_file: keys/k.pem\narchives:\n  - id: current\n');
  t.equal(loadArchiveConfig(cfg).signingKeyFile, path.join(dir, 'keys', 'k.pem'));
});
