/**
 * The one script of the pages for people (/web/), allowed by the page's
 * nonce (never by "'self'": every memento is the archive's "self"). The
 * pages work without it; it adds:
 * 1. the reader's local time on hover over every date (`<time>`; the page
 *    shows UTC);
 * 2. on the replay page, a banner that keeps in step with the archived page
 *    in the frame. A stored page is hostile input: its frame is sandboxed
 *    (an opaque origin), so this script cannot read the frame's location;
 *    the replay shim (archive/replay/static/replay.js) posts it instead
 *    (also from the archive's error page at a Memento address, such as a
 *    link to a URL never captured, which loads the same shim), and a
 *    stored page can post anything. So the message is only a hint:
 *    it is accepted only from the frame, from an opaque origin, and only
 *    when it is a Memento address of this archive where mementos are
 *    served (`<memento base>/<id>/memento/<14 digits>[xx_]/<http(s) URL>`);
 *    nothing of it is shown or inserted. The page then goes (in place of
 *    itself in the history) to `/web/<ts>/<URL>`, which the archive
 *    renders from its own index, with a fresh frame of that memento: what
 *    the banner shows is always what the archive chose for the frame.
 *    The frame starts at `<id>/memento/<T>if_/<URL>`, the reader's time T
 *    (which need not be a stored timestamp: the archive serves the nearest
 *    memento there, rewritten at T, without a redirect): a message naming
 *    that T and URL (in whichever archive) is the page already shown, and
 *    the banner stays; a link followed in the frame reaches a stored
 *    timestamp, and the banner follows it.
 */
(function () {
  'use strict';

  /** Longest Memento address followed (a longer message is ignored). */
  var MAX_HREF = 16384;

  function localTimes(root) {
    root.querySelectorAll('time[datetime]').forEach(function (el) {
      var d = new Date(el.getAttribute('datetime'));
      if (!isNaN(d.getTime())) el.title = 'Your time: ' + d.toLocaleString();
    });
  }

  /**
   * `{ts, url}` of a Memento address under `mementoBase` (an absolute URL,
   * no trailing slash), or null: the path after the base must be
   * `/<id>/memento/<14 digits>[xx_]/<http(s) URL>` and have no dot segment.
   */
  function parseMemento(href, mementoBase) {
    if (typeof href !== 'string' || href.length > MAX_HREF) return null;
    var u;
    try {
      u = new URL(href);
    } catch (e) {
      return null;
    }
    var b = new URL(mementoBase);
    if (u.origin !== b.origin || u.username || u.password) return null;
    var prefix = b.pathname.replace(/\/$/, '') + '/';
    if (u.pathname.indexOf(prefix) !== 0) return null;
    var rest = u.pathname.slice(prefix.length) + u.search;
    var m = /^[A-Za-z0-9][A-Za-z0-9._~-]*\/memento\/(\d{14})(?:[a-z]{2}_)?\/(https?:\/\/[^/?#]+[^#]*)$/.exec(rest);
    if (!m || /(^|\/)(\.|%2e){1,2}(\/|\?|$)/i.test(m[2])) return null;
    return { ts: m[1], url: m[2] };
  }

  document.addEventListener('DOMContentLoaded', function () {
    localTimes(document);
    var frame = document.getElementById('memento-frame');
    if (!frame) return;
    var base = document.body.getAttribute('data-base') || '';
    var mementoBase = frame.getAttribute('data-memento-base') || '';
    var shown = parseMemento(frame.src, mementoBase);
    if (!shown) return;
    window.addEventListener('message', function (event) {
      // Only the frame, whose sandbox gives it an opaque origin ("null"): a message from anywhere else is not the memento's.
      if (event.source !== frame.contentWindow || event.origin !== 'null') return;
      var data = event.data;
      if (!data || typeof data !== 'object' || data.type !== 'memento-archive:load') return;
      var at = parseMemento(data.href, mementoBase);
      if (!at || (at.ts === shown.ts && at.url === shown.url)) return;
      var page = base + '/web/' + at.ts + '/' + at.url;
      // The address must stay a replay page of this archive once the browser has parsed it.
      var target = new URL(page, location.href);
      if (target.origin !== location.origin || target.pathname.indexOf(new URL(base + '/web/' + at.ts + '/', location.href).pathname) !== 0) return;
      shown = at;
      location.replace(target.href);
    });
  });
})();
