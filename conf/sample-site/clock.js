document.body.insertAdjacentHTML('beforeend', '<p><small>Rendered at ' + new Date().toUTCString() + '</small></p>');
