/**
 * An S3-compatible server in the test's own process (s3rver) on 127.0.0.1
 * port 0 with a temp folder, for archives whose WARC files are in a bucket
 * (`storage.warcs: s3://…`). The AWS SDK finds the server's credentials in
 * the environment, as a daemon finds real ones.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

// s3rver's fixed key pair; the SDK's default chain reads these (no other source is consulted then).
process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
// The SDK's notice that its 2027 versions need Node 22: not what a test checks.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export interface TestS3 {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  bucket: string;
  /** A client of the server (path style, the checksum settings the daemon uses). */
  client: S3Client;
  /** The `storage:` lines of conf/archive.yaml for WARCs under `s3://<bucket>/<prefix>` written as `replica`. */
  storageYaml(prefix: string, replica: string): string;
  /** An object's bytes. */
  get(key: string): Promise<Buffer>;
  put(key: string, body: Buffer): Promise<void>;
  /** Stops the server (its data stays until `close`); requests to it then fail. */
  stop(): Promise<void>;
  /** Stops the server if running and removes its folder. */
  close(): Promise<void>;
}

/** Starts s3rver with one empty bucket (default `warcs`). */
export async function startS3(bucket = 'warcs'): Promise<TestS3> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 's3rver-test-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: bucket, configs: [] }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  let running = true;
  const stop = async () => {
    if (!running) return;
    running = false;
    await server.close();
  };
  return {
    endpoint,
    bucket,
    client,
    storageYaml: (prefix, replica) =>
      `storage:\n  warcs: s3://${bucket}/${prefix}\n  s3:\n    endpoint: ${endpoint}\n    region: us-east-1\n    force_path_style: true\n  replica: ${replica}\n`,
    async get(key) {
      const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return Buffer.from(await r.Body!.transformToByteArray());
    },
    async put(key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    stop,
    async close() {
      client.destroy();
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
