/**
 * Index rows made up for tests that read only the index (the `/web/`
 * pages, the CDX API, the TimeMaps): written with `IndexDb.insertMany`,
 * they point at no WARC record.
 */
import type { NewMementoRow } from '../../archive/store/index/index-db.js';
import { exactUrlkey } from '#shared/uri.js';

/**
 * A 200 `text/html` row of `uriR` at `datetime` (epoch seconds) in archive
 * `archiveId`, its digest and WARC offset made from the datetime (so rows of
 * one URL differ); `fields` overrides any column.
 */
export function indexRowOf(archiveId: string, uriR: string, datetime: number, fields: Partial<NewMementoRow> = {}): NewMementoRow {
  return {
    archive_id: archiveId,
    urlkey: exactUrlkey(uriR),
    uri_r: uriR,
    datetime,
    status: 200,
    mime: 'text/html',
    digest: 'sha256:' + String(datetime).padStart(64, '0'),
    warc_file: `${archiveId}/none.warc.gz`,
    warc_offset: datetime,
    warc_length: 1,
    client_ip: null,
    refers_to: null,
    ...fields,
  };
}
