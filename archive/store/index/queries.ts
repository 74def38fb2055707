/**
 * The named queries of the index, for the adapters (index-db.ts,
 * index-pg.ts) to make over their own reads (reads.ts).
 */
export { FeedQueries } from './feed-queries.js';
export { KeyQueries } from './key-queries.js';
export { PageQueries } from './page-queries.js';
export { PanelQuery } from './panel-query.js';
export type { IndexReads } from './reads.js';
