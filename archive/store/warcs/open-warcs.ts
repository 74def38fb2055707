/**
 * The WARC store the config names (warc-store.ts): the bucket of
 * `storage.warcs` (s3-warcs.ts), else the folder `<data_dir>/warcs`.
 */
import path from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import { FolderWarcStore, type WarcStore } from './warc-store.js';

/**
 * The WARC store `config` names: the bucket of `storage.warcs`, else the
 * folder `<data_dir>/warcs`. Opens no connection yet. The S3 client (the
 * AWS SDK, about 14 MiB of a daemon's memory) is loaded only when a bucket
 * is configured.
 */
export async function openWarcStore(config: ArchiveConfig): Promise<WarcStore> {
  if (!config.warcStore) return new FolderWarcStore(path.join(config.dataDir, 'warcs'));
  const { S3WarcStore } = await import('./s3-warcs.js');
  return new S3WarcStore(config.warcStore);
}
