// Paperboy console: live updates of a broadcast's page over Server-Sent Events. The server renders every part
// (numbers, tables, SVG charts); this only swaps them in. No framework, no build step, nothing from elsewhere.
(function () {
  'use strict';
  var root = document.querySelector('[data-live-url]');
  if (!root || !window.EventSource) { return; }
  var source = new EventSource(root.getAttribute('data-live-url'));
  var status = document.createElement('p');
  status.className = 'hint';
  status.setAttribute('role', 'status');
  root.insertBefore(status, root.firstChild);

  source.addEventListener('update', function (event) {
    var data = JSON.parse(event.data);
    Object.keys(data.parts).forEach(function (name) {
      var part = root.querySelector('[data-live="' + name + '"]');
      if (part) { part.innerHTML = data.parts[name]; }
    });
    root.setAttribute('data-updated', data.at);
    status.textContent = 'Live: updated ' + new Date(data.at).toLocaleTimeString();
  });
  source.addEventListener('end', function () {
    source.close();
    status.textContent = 'The broadcast has ended.';
  });
  // The session ended (signed out here or elsewhere, or everyone was): stop, and say how to go on.
  source.addEventListener('signed-out', function () {
    source.close();
    root.setAttribute('data-signed-out', '');
    status.textContent = 'Signed out: live updates stopped. Sign in again to go on watching.';
  });
  source.addEventListener('error', function () {
    status.textContent = source.readyState === EventSource.CLOSED ? 'Live updates stopped: reload the page.' : 'Reconnecting…';
  });
})();
