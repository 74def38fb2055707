/**
 * A local RFC 3161 timestamping authority for tests: a CA and a TSA
 * certificate (extendedKeyUsage=critical,timeStamping) made with `openssl`
 * in a temp folder, and `openssl ts -reply` behind a node:http server on
 * 127.0.0.1 port 0 (`POST /`, `application/timestamp-query` →
 * `application/timestamp-reply`). Requests are answered one at a time
 * (`openssl ts` keeps its serial number in a file).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A CA and a TSA certificate and key, as files in `dir`. */
export interface TsaPki {
  readonly dir: string;
  /** the CA certificate (PEM): what a verifier trusts */
  readonly caFile: string;
  readonly caPem: string;
  /** the TSA's certificate (PEM) */
  readonly tsaCertFile: string;
  readonly tsaKeyFile: string;
  /** `openssl ts` configuration of this TSA */
  readonly configFile: string;
}

/** How the PKI is made. */
export interface TsaPkiOptions {
  /** the TSA certificate's extendedKeyUsage value (default `critical,timeStamping`); `null` for none */
  readonly eku?: string | null;
  /** the CA's common name (default `Test TSA CA`) */
  readonly caName?: string;
}

/** Makes a CA (EC P-256, self-signed) and a TSA certificate it issues, in a new temp folder. */
export async function makeTsaPki(opts: TsaPkiOptions = {}): Promise<TsaPki> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tsa-'));
  const f = (name: string) => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await run(
    'openssl',
    ['req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-subj', `/CN=${opts.caName ?? 'Test TSA CA'}`, '-days', '3'].concat([
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]),
  );
  await run('openssl', ['req', ...ec, '-keyout', f('tsa.key'), '-out', f('tsa.csr'), '-subj', '/O=Test/CN=Test TSA']);
  const eku = opts.eku === undefined ? 'critical,timeStamping' : opts.eku;
  writeFileSync(f('ext.cnf'), `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n${eku === null ? '' : `extendedKeyUsage=${eku}\n`}`);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    f('tsa.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('tsa.crt'),
    '-days',
    '3',
    '-extfile',
    f('ext.cnf'),
  ]);
  writeFileSync(f('serial'), '01\n');
  writeFileSync(
    f('ts.cnf'),
    [
      '[ tsa ]',
      'default_tsa = tsa_config1',
      '[ tsa_config1 ]',
      `dir = ${dir}`,
      'serial = $dir/serial',
      'crypto_device = builtin',
      'signer_cert = $dir/tsa.crt',
      'certs = $dir/ca.crt',
      'signer_key = $dir/tsa.key',
      'signer_digest = sha256',
      'default_policy = 1.2.3.4.1',
      'other_policies = 1.2.3.4.5',
      'digests = sha256, sha384, sha512',
      'accuracy = secs:1',
      'ordering = yes',
      'tsa_name = yes',
      'ess_cert_id_chain = no',
      'ess_cert_id_alg = sha256',
      '',
    ].join('\n'),
  );
  return { dir, caFile: f('ca.crt'), caPem: readFileSync(f('ca.crt'), 'utf8'), tsaCertFile: f('tsa.crt'), tsaKeyFile: f('tsa.key'), configFile: f('ts.cnf') };
}

/** A running local TSA. */
export interface LocalTsa extends TsaPki {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  /** how many queries it answered */
  readonly answered: () => number;
  /** changes the next answers (the DER TimeStampResp `openssl ts -reply` made) before they are sent; undefined sends them as made */
  tamper?: (reply: Buffer, query: Buffer) => Buffer | { status: number; body: Buffer };
  /** closes the server and removes the folder */
  close(): Promise<void>;
}

/**
 * Starts a TSA on 127.0.0.1 port 0 with a new PKI (see {@link makeTsaPki}).
 * Close it at the end of the test.
 */
export async function startTsa(opts: TsaPkiOptions = {}): Promise<LocalTsa> {
  const pki = await makeTsaPki(opts);
  let queue: Promise<unknown> = Promise.resolve();
  let count = 0;
  const reply = async (query: Buffer): Promise<Buffer> => {
    const n = ++count;
    const q = path.join(pki.dir, `q${n}.der`);
    const r = path.join(pki.dir, `r${n}.der`);
    writeFileSync(q, query);
    await run('openssl', ['ts', '-reply', '-config', pki.configFile, '-queryfile', q, '-out', r]);
    return readFileSync(r);
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= 64 * 1024) chunks.push(c);
    });
    req.on('end', () => {
      if (req.method !== 'POST' || req.headers['content-type'] !== 'application/timestamp-query' || size > 64 * 1024) {
        res.writeHead(400).end();
        return;
      }
      const query = Buffer.concat(chunks);
      const answer = queue.then(() => reply(query));
      queue = answer.catch(() => undefined);
      answer.then(
        (der) => {
          const out = tsa.tamper ? tsa.tamper(der, query) : der;
          if (Buffer.isBuffer(out)) res.writeHead(200, { 'content-type': 'application/timestamp-reply' }).end(out);
          else res.writeHead(out.status, { 'content-type': 'application/timestamp-reply' }).end(out.body);
        },
        (err: Error) => res.writeHead(500).end(err.message),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const tsa: LocalTsa = {
    ...pki,
    url: `http://127.0.0.1:${port}/`,
    answered: () => count,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(pki.dir, { recursive: true, force: true });
    },
  };
  return tsa;
}
