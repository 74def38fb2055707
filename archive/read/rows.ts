/**
 * The shapes of what the read side answers with, for the routes and pages
 * (which do not import the store's index): a memento's row, the reference
 * a navigation link needs, the mementos around an instant, the spans of a
 * URL per archive. Defined with the index (archive/store/index/memento-row.ts).
 */
export type { MementoRef, MementoRow, Neighbourhood, NewMementoRow, Ranges, Spans } from '../store/index/memento-row.js';
