/**
 * Types of css-tree's tokenizer entry point (`css-tree/tokenizer`), which
 * @types/css-tree declares only as part of the whole package. The archive
 * loads the tokenizer alone: the whole package (lexer and its syntax data)
 * would add some 12 MiB and 100 ms to the daemon's start.
 */
declare module 'css-tree/tokenizer' {
  export { tokenize, tokenTypes } from 'css-tree';
}
