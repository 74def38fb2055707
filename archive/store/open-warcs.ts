/**
 * The WARC store the config names (warc-store.ts): the bucket of
 * `storage.warcs` (s3-warcs.ts), else the folder `<data_dir>/warcs`.
 */
import path from 'node:path';
import type { ArchiveConfig } from '../config.js';
import { S3WarcStore } from './s3-warcs.js';
import { FolderWarcStore, type WarcStore } from './warc-store.js';

/** The WARC store `config` names: the bucket of `storage.warcs`, else the folder `<data_dir>/warcs`. Opens no connection yet. */
export function openWarcStore(config: ArchiveConfig): WarcStore {
  return config.warcStore ? new S3WarcStore(config.warcStore) : new FolderWarcStore(path.join(config.dataDir, 'warcs'));
}
