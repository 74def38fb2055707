/**
 * The one script of the pages for people (/web/). The pages work without
 * it; it adds:
 * 1. the reader's local time on hover over every date (`<time>`; the page
 *    shows UTC);
 * 2. on the replay page, a banner that keeps in step with the archived
 *    page in the frame: every replayed page posts its address when it
 *    loads (archive/replay/static/replay.js); the banner of that capture is
 *    fetched from the archive and the address bar shows /web/<ts>/<url>.
 */
(function () {
  'use strict';

  function localTimes(root) {
    root.querySelectorAll('time[datetime]').forEach(function (el) {
      var d = new Date(el.getAttribute('datetime'));
      if (!isNaN(d.getTime())) el.title = 'Your time: ' + d.toLocaleString();
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    localTimes(document);
    var frame = document.getElementById('memento-frame');
    var banner = document.getElementById('banner');
    if (!frame || !banner) return;
    var base = document.body.getAttribute('data-base') || '';
    var shown = '';
    window.addEventListener('message', function (event) {
      if (event.source !== frame.contentWindow) return;
      var data = event.data;
      if (!data || data.type !== 'memento-archive:load' || typeof data.href !== 'string') return;
      if (data.href.indexOf(base + '/') !== 0) return;
      // {base}/<archive>/memento/<14 digits>[modifier]/<URI-R>
      var m = /^[^/?#]+\/memento\/(\d{14})(?:[a-z]{2}_)?\/(.+)$/.exec(data.href.slice(base.length + 1));
      if (!m) return;
      var key = m[1] + '/' + m[2];
      if (key === shown) return;
      shown = key;
      fetch(base + '/web/_banner/' + key, { headers: { accept: 'text/html' } })
        .then(function (r) {
          return r.ok ? r.text() : null;
        })
        .then(function (html) {
          if (html === null || shown !== key) return;
          var doc = new DOMParser().parseFromString(html, 'text/html');
          var inner = doc.querySelector('.banner-inner');
          if (!inner) return;
          banner.replaceChildren(document.importNode(inner, true));
          localTimes(banner);
          var title = inner.getAttribute('data-page-title');
          if (title) document.title = title;
          var url = inner.getAttribute('data-web-url');
          if (url && url !== location.href) history.replaceState(null, '', url);
        })
        .catch(function () {
          /* the banner stays as it was */
        });
    });
    // The banner shown by the server is the frame's first page.
    var first = banner.querySelector('.banner-inner');
    var initial = first && /\/web\/(\d{14}\/.+)$/.exec(first.getAttribute('data-web-url') || '');
    if (initial) shown = initial[1];
  });
})();
