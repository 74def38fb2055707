/**
 * Loaded first by every page the archive replays (archive/replay/html.ts
 * puts it in, with the page's Memento-Datetime as `data-memento-datetime`).
 *
 * 1. A replayed page runs in a sandbox with an opaque origin, not as the
 *    archive; there `localStorage`, `sessionStorage` and `document.cookie`
 *    throw a SecurityError, and scripts written for the live site stop at
 *    the first use. They get in-memory stand-ins, kept for the life of the
 *    page, so that the page goes on running as it did.
 * 2. The page's clock is its Memento-Datetime: `new Date()`, `Date()` and
 *    `Date.now()` start at the moment of capture and run on from there, so
 *    that a page that prints "today" shows the day it was captured.
 * 3. In a frame (the banner page /web/<ts>/<url>), it tells the parent
 *    which memento it is once loaded (`postMessage` of its address alone),
 *    so that the banner follows the reader's navigation. The parent takes
 *    it as a hint only (a stored page can post anything): it shows nothing
 *    of it, and goes to the /web/ page of that address, which the archive
 *    renders (archive/web/static/web.js).
 */
(function () {
  'use strict';

  function memoryStorage() {
    var data = new Map();
    return {
      getItem: function (key) {
        key = String(key);
        return data.has(key) ? data.get(key) : null;
      },
      setItem: function (key, value) {
        data.set(String(key), String(value));
      },
      removeItem: function (key) {
        data.delete(String(key));
      },
      clear: function () {
        data.clear();
      },
      key: function (i) {
        var keys = Array.from(data.keys());
        return i >= 0 && i < keys.length ? keys[i] : null;
      },
      get length() {
        return data.size;
      },
    };
  }

  ['localStorage', 'sessionStorage'].forEach(function (name) {
    try {
      void window[name];
    } catch {
      try {
        Object.defineProperty(window, name, { value: memoryStorage(), configurable: true });
      } catch {
        // not replaceable here: the page sees the error, as it would without this script
      }
    }
  });

  try {
    void document.cookie;
  } catch {
    var jar = new Map();
    try {
      Object.defineProperty(document, 'cookie', {
        configurable: true,
        get: function () {
          return Array.from(jar, function (e) {
            return e[0] + '=' + e[1];
          }).join('; ');
        },
        set: function (value) {
          var pair = String(value).split(';')[0];
          var eq = pair.indexOf('=');
          if (eq > 0) jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
        },
      });
    } catch {
      // not replaceable here
    }
  }

  if (window.parent !== window) {
    var tell = function () {
      try {
        window.parent.postMessage({ type: 'memento-archive:load', href: location.href }, '*');
      } catch {
        // no parent to tell
      }
    };
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', tell);
    else tell();
  }

  var script = document.currentScript;
  var ts = script && script.getAttribute('data-memento-datetime');
  if (!ts || !/^\d{14}$/.test(ts)) return;
  var RealDate = Date;
  var capturedAt = RealDate.UTC(+ts.slice(0, 4), +ts.slice(4, 6) - 1, +ts.slice(6, 8), +ts.slice(8, 10), +ts.slice(10, 12), +ts.slice(12, 14));
  var loadedAt = RealDate.now();
  function now() {
    return capturedAt + (RealDate.now() - loadedAt);
  }
  function ArchiveDate() {
    // Called without new: the date as a string, as Date() does.
    if (!new.target) return new RealDate(now()).toString();
    return Reflect.construct(RealDate, arguments.length ? Array.from(arguments) : [now()], new.target);
  }
  ArchiveDate.prototype = RealDate.prototype;
  ArchiveDate.now = now;
  ArchiveDate.parse = RealDate.parse;
  ArchiveDate.UTC = RealDate.UTC;
  Object.defineProperty(RealDate.prototype, 'constructor', { value: ArchiveDate, writable: true, configurable: true });
  window.Date = ArchiveDate;
})();
