// Bench only (bench/search.ts, bench/timegate.ts): loaded into an archive daemon with
// `node --import ./bench/text-index-off.mjs bin/memento-archive.js serve …`,
// it turns the daemon's text indexer (archive/search/indexer.ts) into one
// that never starts a walk, so that no memento's text is read, parsed or
// stored: the daemon is otherwise the same code and config, for a same-run
// A/B of what the full-text index costs ingest. The archive has no setting
// for this; tsx is registered here as bin/memento-archive.js registers it,
// so that the daemon imports this same instance of the module.
import { register } from 'tsx/esm/api';

register();
const { TextIndexer } = await import('../archive/search/indexer.ts');
TextIndexer.prototype.nudge = function nudge() {};
