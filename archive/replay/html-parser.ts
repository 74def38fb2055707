/**
 * htmlparser2's `Parser` with its stack of open elements bounded, for
 * every reader of stored HTML in the archive (the replay's rewriter, the
 * replay panel's resource list, the text of `/web/diff/…`). htmlparser2
 * keeps the open elements in an array it grows at the front, so a page
 * of elements that are never closed (`<b>` a hundred thousand times)
 * costs time that grows with the square of their number: 2 MiB of
 * unclosed `<b style=…>` took 3 s of parsing alone, 80,000 bare `<b>` 1.6 s.
 * Here the stack keeps the innermost {@link MAX_OPEN_ELEMENTS}; an element
 * deeper than that forgets its outermost ancestor, whose end tag is then
 * not matched (as a browser's tree builder, which stops nesting at a
 * depth of 512). Every event of a page within that depth is as before.
 */
import { Parser } from 'htmlparser2';

/** Most open elements the parser keeps (Chromium's HTML tree builder nests no deeper). */
export const MAX_OPEN_ELEMENTS = 512;

/** What htmlparser2 keeps in its foreign-content stack for these elements (its `foreignContextElements` and `htmlIntegrationElements`). */
const FOREIGN = new Set(['math', 'svg', 'mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml', 'foreignObject', 'desc', 'title']);

/** The parser's own stacks (private in its types): innermost element first; the foreign-content stack ends with its base entry. */
interface Stacks {
  stack: string[];
  foreignContext: unknown[];
}

/** htmlparser2's `Parser` whose stack of open elements holds at most {@link MAX_OPEN_ELEMENTS} (see the module comment). */
export class BoundedParser extends Parser {
  /**
   * htmlparser2 asks this before it opens an element (and when it closes
   * one): the moment to drop the outermost open elements past the bound,
   * with their entries in the foreign-content stack, as closing them would.
   */
  protected override isVoidElement(name: string): boolean {
    const self = this as unknown as Stacks;
    while (self.stack.length >= MAX_OPEN_ELEMENTS) {
      const outer = self.stack.pop()!;
      if (FOREIGN.has(outer) && self.foreignContext.length > 1) self.foreignContext.splice(self.foreignContext.length - 2, 1);
    }
    return super.isVoidElement(name);
  }
}
