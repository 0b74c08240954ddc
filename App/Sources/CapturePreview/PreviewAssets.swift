import CaptureJobs
/// The preview's page, script and style, embedded in the binary (no CDN, no bundle resources:
/// the box may be offline, and resources would not travel with the executable).
///
/// The script draws what the server sends and nothing else: the frame's rect, face boxes, code
/// outlines and moving regions arrive in layer space, computed by `CaptureVideoPreviewLayer`. Text that came
/// from outside (payloads, event text) only ever reaches the page through `textContent`.
///
/// Threading: constants; thread-safe.
package enum PreviewAssets {
    /// Escapes `text` for HTML text and attribute values.
    package static func escaped(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    /// What a camera's state is called on the pages.
    package static func stateText(_ state: PreviewDirectory.Status.State) -> String {
        switch state {
        case .live: "Streaming"
        case .starting: "Starting…"
        case .offline: "Not streaming"
        case .interrupted: "Interrupted"
        }
    }

    /// The list of cameras at `/`: each camera's display name, status (with the reason when it
    /// is not streaming) and a thumbnail; `/assets/index.js` keeps them current. With `library`
    /// (`cvcam serve`'s dashboard) each camera also shows the faces in view, the last code and
    /// its latest snapshots and clips, which the script fills in from `/dashboard.json`.
    package static func listPage(_ cameras: [PreviewDirectory.Status], library: Bool = false) -> String {
        let items = cameras.map { c in
            let thumbnail = c.state == .live
                ? "<img class=\"thumbnail\" alt=\"\" width=\"160\" height=\"120\" src=\"\(escaped(c.page))/thumbnail.jpg\">"
                : "<img class=\"thumbnail\" alt=\"\" width=\"160\" height=\"120\" hidden>"
            return """
                <li class="camera" data-name="\(escaped(c.name))" data-state="\(c.state.rawValue)">\
                <a class="thumbnail-link" href="\(escaped(c.page))">\(thumbnail)<span class="no-picture"\(c.state == .live ? " hidden" : "")>no picture</span></a>\
                <div class="about"><a class="display-name" href="\(escaped(c.page))">\(escaped(c.displayName))</a> \
                <span class="name">\(escaped(c.name))</span>\
                <p><span class="state">\(stateText(c.state))</span> <span class="reason">\(escaped(c.reason ?? ""))</span></p></div>\
                \(library ? libraryBlock : "")</li>
                """
        }.joined(separator: "\n")
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Cameras — cvcam</title>
            <link rel="stylesheet" href="/assets/preview.css"></head>
            <body class="index"\(library ? " data-library" : "")><h1>Cameras</h1>
            <ul id="cameras">
            \(items)
            </ul>
            <script src="/assets/index.js"></script>
            </body></html>
            """
    }

    /// Where the script puts a camera's facts, snapshots and clips.
    static let libraryBlock = """
        <div class="library"><p class="facts"><span class="faces"></span> <span class="last-code"></span></p>\
        <h3>Snapshots</h3><div class="snapshots files"><span class="none">none yet</span></div>\
        <h3>Clips</h3><div class="clips files"><span class="none">none yet</span></div></div>
        """

    /// One camera's page; `base` is its path (`/cameras/<name>`). The AVFoundation name of each
    /// control is its tooltip.
    package static func page(name: String, displayName: String? = nil, base: String, cameraCount: Int = 1) -> String {
        let shown = displayName ?? name
        let back = cameraCount > 1 ? "<a id=\"all-cameras\" href=\"/\">All cameras</a>" : ""
        return """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escaped(shown)) — cvcam</title>
        <link rel="stylesheet" href="/assets/preview.css">
        </head>
        <body data-base="\(escaped(base))">
        <header>
          <h1><span id="display-name">\(escaped(shown))</span> <span id="camera-name" class="name">\(escaped(name))</span></h1>
          <span id="status">connecting…</span>
          \(back)
        </header>
        <form id="controls">
          <label title="The size of the picture on this page (the preview layer's bounds)">Size
            <input id="view-width" type="number" min="1" max="16384" value="640" aria-label="width"> ×
            <input id="view-height" type="number" min="1" max="16384" value="480" aria-label="height"></label>
          <label title="How the picture fills that size (videoGravity)">Picture <select id="gravity">
            <option value="resizeAspect" title="videoGravity = resizeAspect">Fit: whole picture, with bars</option>
            <option value="resizeAspectFill" title="videoGravity = resizeAspectFill">Fill: cropped to the size</option>
            <option value="resize" title="videoGravity = resize">Stretch to the size</option>
          </select></label>
          <label title="Turns the picture clockwise (the connection's videoRotationAngle)">Turn <select id="rotation">
            <option value="0">not turned</option><option value="90">90° clockwise</option>
            <option value="180">upside down</option><option value="270">90° anticlockwise</option>
          </select></label>
          <label title="Flips the picture left to right (isVideoMirrored)"><input id="mirrored" type="checkbox"> Mirror</label>
          <button id="reset-roi" type="button" title="Sets rectOfInterest back to the whole frame (0, 0, 1, 1)">Look in the whole picture</button>
          <button id="photo" type="button" title="capturePhoto: a full-size JPEG to download">Take photo</button>
        </form>
        <main>
          <div id="view">
            <img id="video" alt="live video">
            <svg id="overlay" xmlns="http://www.w3.org/2000/svg">
              <rect id="roi" class="roi"></rect>
              <g id="motion"></g>
              <g id="faces"></g>
              <g id="codes"></g>
              <rect id="drag" class="drag"></rect>
            </svg>
            <div id="offline" role="status" hidden><strong id="offline-title">Not streaming</strong><p id="offline-reason"></p></div>
          </div>
          <aside>
            <p id="counters">no frames yet</p>
            <p id="tap-result">Click the picture to focus and expose there; drag across it to choose where faces and codes are looked for.</p>
            <p id="photo-result"></p>
            <p id="error" role="alert"></p>
            <h2>Events</h2>
            <ol id="events"></ol>
          </aside>
        </main>
        <script src="/assets/preview.js"></script>
        </body>
        </html>
        """
    }

    package static let style = """
        body { font: 14px system-ui, sans-serif; margin: 12px; background: #f4f4f4; color: #111; }
        header { display: flex; gap: 16px; align-items: baseline; }
        h1 { font-size: 18px; margin: 0 0 8px; }
        h2 { font-size: 15px; margin: 12px 0 4px; }
        #controls { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin-bottom: 8px; }
        #controls input[type=number] { width: 5em; }
        main { display: flex; gap: 16px; align-items: flex-start; }
        #view { position: relative; overflow: hidden; background: #000; width: 640px; height: 480px; flex: none; }
        #video { position: absolute; left: 0; top: 0; }
        #overlay { position: absolute; left: 0; top: 0; cursor: crosshair; }
        .face { fill: none; stroke: #2ee66b; stroke-width: 2; }
        .code { fill: rgba(255, 196, 0, 0.15); stroke: #ffc400; stroke-width: 2; }
        .roi { fill: none; stroke: #3fa9ff; stroke-width: 2; stroke-dasharray: 6 4; }
        .motion { fill: rgba(255, 64, 208, 0.08); stroke: #ff40d0; stroke-width: 1.5; stroke-dasharray: 2 3; }
        .drag { fill: rgba(63, 169, 255, 0.15); stroke: #3fa9ff; stroke-width: 1; visibility: hidden; }
        .label { fill: #fff; font: 13px system-ui, sans-serif; paint-order: stroke; stroke: #000; stroke-width: 3px; }
        aside { max-width: 420px; overflow-wrap: anywhere; }
        #events { font: 12px ui-monospace, monospace; padding-left: 20px; }
        #error { color: #b00020; }
        #tap-result.set { color: #006400; }
        .name { color: #666; font-size: 13px; font-weight: normal; }
        #all-cameras { margin-left: auto; }
        #offline { position: absolute; inset: 0; display: flex; flex-direction: column; justify-content: center;
          align-items: center; padding: 24px; background: #222; color: #eee; text-align: center; }
        #offline[hidden] { display: none; }
        #offline p { max-width: 90%; overflow-wrap: anywhere; color: #ffb4a9; }
        body.index ul { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 16px; }
        .camera { display: flex; gap: 12px; width: 420px; background: #fff; border-radius: 6px; padding: 8px; }
        .thumbnail-link { flex: none; width: 160px; height: 120px; background: #222; color: #aaa; display: flex;
          align-items: center; justify-content: center; text-decoration: none; }
        .thumbnail { width: 160px; height: 120px; object-fit: contain; }
        .thumbnail[hidden], .no-picture[hidden] { display: none; }
        .camera .about { overflow-wrap: anywhere; }
        .camera .reason { display: block; margin-top: 4px; font-size: 12px; color: #444; }
        .display-name { font-weight: 600; }
        .camera[data-state=live] .state { color: #006400; }
        .camera[data-state=offline] .state, .camera[data-state=interrupted] .state { color: #b00020; }
        body.index[data-library] .camera { flex-wrap: wrap; width: 560px; }
        .library { flex-basis: 100%; }
        .library h3 { font-size: 13px; margin: 8px 0 4px; }
        .files { display: flex; flex-wrap: wrap; gap: 6px; }
        .file { display: flex; flex-direction: column; width: 128px; font-size: 11px; color: #444; }
        .file img { width: 128px; height: 96px; object-fit: contain; background: #222; cursor: pointer; }
        .file .when { white-space: nowrap; }
        .facts .faces, .facts .last-code { font-size: 13px; }
        """

    /// The list page's script: keeps each camera's status current and, while the page is
    /// visible, its thumbnail (a small JPEG the server makes on demand and keeps 2 s).
    package static let indexScript = #"""
        'use strict';
        (function () {
          const words = { live: 'Streaming', starting: 'Starting…', offline: 'Not streaming', interrupted: 'Interrupted' };
          let round = 0;
          function refresh() {
            if (document.visibilityState !== 'visible') return;
            round += 1;
            fetch('/cameras.json', { cache: 'no-store' })
              .then((r) => r.ok ? r.json() : [])
              .then((cameras) => {
                for (const c of cameras) {
                  const li = document.querySelector('li.camera[data-name="' + CSS.escape(c.name) + '"]');
                  if (!li) continue;
                  li.dataset.state = c.state;
                  li.querySelector('.display-name').textContent = c.displayName;
                  li.querySelector('.state').textContent = words[c.state] || c.state;
                  li.querySelector('.reason').textContent = c.reason || '';
                  const img = li.querySelector('.thumbnail');
                  const live = c.state === 'live';
                  img.hidden = !live;
                  li.querySelector('.no-picture').hidden = live;
                  if (live && (round % 2 === 0 || !img.getAttribute('src'))) img.src = c.page + '/thumbnail.jpg?n=' + round;
                }
              })
              .catch(() => {});
          }
          // The dashboard (cvcam serve): facts, and the latest snapshots and clips, redrawn only when they changed.
          const shown = {};
          function fileItem(f, isClip) {
            const item = document.createElement('div');
            item.className = 'file';
            const img = document.createElement('img');
            img.loading = 'lazy';
            img.alt = isClip ? 'clip' : 'snapshot';
            img.src = f.image;
            img.title = isClip ? 'Play' : 'Open';
            img.addEventListener('click', () => {
              if (!isClip) { window.open(f.image, '_blank', 'noopener'); return; }
              // A clip plays in the picture itself (a Motion-JPEG stream); a second click shows its first frame again.
              img.src = img.dataset.playing ? f.image : f.play + '?n=' + Date.now();
              if (img.dataset.playing) delete img.dataset.playing; else img.dataset.playing = '1';
            });
            const when = document.createElement('span');
            when.className = 'when';
            when.textContent = f.time.replace('T', ' ').slice(0, 19);
            const save = document.createElement('a');
            save.href = f.download;
            save.textContent = 'Download' + (isClip ? ' (AVI)' : '');
            save.setAttribute('download', f.name);
            item.append(img, when, save);
            return item;
          }
          function showFiles(box, files, isClip) {
            box.replaceChildren(...(files.length ? files.slice(0, 6).map((f) => fileItem(f, isClip)) : [Object.assign(document.createElement('span'), { className: 'none', textContent: 'none yet' })]));
          }
          function refreshLibrary() {
            if (!document.body.hasAttribute('data-library') || document.visibilityState !== 'visible') return;
            fetch('/dashboard.json', { cache: 'no-store' })
              .then((r) => r.ok ? r.json() : { cameras: [] })
              .then((d) => {
                for (const c of d.cameras) {
                  const li = document.querySelector('li.camera[data-name="' + CSS.escape(c.name) + '"]');
                  if (!li) continue;
                  li.querySelector('.faces').textContent = c.faceIDs.length ? 'Faces now: ' + c.faceIDs.length + ' (ID ' + c.faceIDs.join(', ') + ')' : 'No face now';
                  li.querySelector('.last-code').textContent = c.lastCode ? '· last ' + c.lastCode.kind + ': ' + c.lastCode.text + ' (' + c.lastCode.time.replace('T', ' ').slice(0, 19) + ')' : '';
                  const key = JSON.stringify([c.snapshots.map((f) => f.name), c.clips.map((f) => f.name)]);
                  if (shown[c.name] === key) continue;
                  shown[c.name] = key;
                  showFiles(li.querySelector('.snapshots'), c.snapshots, false);
                  showFiles(li.querySelector('.clips'), c.clips, true);
                }
              })
              .catch(() => {});
          }
          refreshLibrary();
          setInterval(refreshLibrary, 5000);
          document.addEventListener('visibilitychange', refreshLibrary);
          for (const img of document.querySelectorAll('img.thumbnail')) {
            img.addEventListener('error', () => { img.hidden = true; img.parentElement.querySelector('.no-picture').hidden = false; });
          }
          setInterval(refresh, 3000);
          document.addEventListener('visibilitychange', refresh);
        })();
        """#

    package static let script = #"""
        'use strict';
        // Draws what the server computes; the only numbers made here are the view's own size and
        // the pointer's position in it (a layer point, by definition).
        (function () {
          const base = document.body.dataset.base;
          const $ = (id) => document.getElementById(id);
          const SVG = 'http://www.w3.org/2000/svg';
          const MOTION_LIMIT = \#(PreviewMessage.maximumMotionRegions);
          const view = $('view'), overlay = $('overlay'), video = $('video');
          let socket = null;
          let dragStart = null;
          let socketOpened = false, videoStarts = 0;
          let streaming = false, statusTimer = null;
          function startVideo() {
            videoStarts += 1;
            video.src = base + '/stream.mjpeg?start=' + videoStarts;
          }

          // Why the camera does not stream, instead of a broken image: asked of the server until
          // the camera is back, then the video starts again.
          const stateWords = { live: 'live', starting: 'starting…', offline: 'not streaming', interrupted: 'interrupted' };
          function showStatus(s) {
            const down = s.state !== 'live';
            $('offline').hidden = !down;
            video.style.visibility = down ? 'hidden' : 'visible';
            if (down) {
              $('offline-title').textContent = s.state === 'starting' ? 'Starting…' : 'Not streaming';
              $('offline-reason').textContent = s.reason || (s.state === 'starting' ? 'The camera is being opened.' : '');
              $('status').textContent = stateWords[s.state] || s.state;
            }
            $('display-name').textContent = s.displayName;
            if (down) {
              streaming = false;
            } else if (!streaming) {
              streaming = true;
              startVideo();
            }
          }
          function checkStatus() {
            clearTimeout(statusTimer);
            fetch(base + '/status.json', { cache: 'no-store' })
              .then((r) => r.ok ? r.json() : null)
              .then((s) => { if (s) showStatus(s); })
              .catch(() => {})
              .finally(() => { statusTimer = setTimeout(checkStatus, streaming ? 5000 : 2000); });
          }

          function send(message) {
            if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
          }

          function viewMessage() {
            return { type: 'view', width: Number($('view-width').value), height: Number($('view-height').value),
                     gravity: $('gravity').value };
          }

          function applyView() {
            const v = viewMessage();
            if (!(v.width >= 1 && v.height >= 1)) return;
            view.style.width = v.width + 'px';
            view.style.height = v.height + 'px';
            overlay.setAttribute('width', v.width);
            overlay.setAttribute('height', v.height);
            send(v);
          }

          function applyConnection() {
            send({ type: 'connection', rotation: Number($('rotation').value), mirrored: $('mirrored').checked });
          }

          function setRect(element, r) {
            element.setAttribute('x', r.x);
            element.setAttribute('y', r.y);
            element.setAttribute('width', r.width);
            element.setAttribute('height', r.height);
          }

          function label(x, y, text) {
            const t = document.createElementNS(SVG, 'text');
            t.setAttribute('class', 'label');
            t.setAttribute('x', x);
            t.setAttribute('y', y);
            t.textContent = text;  // never parsed as markup
            return t;
          }

          function drawGeometry(g) {
            video.style.left = g.video.x + 'px';
            video.style.top = g.video.y + 'px';
            video.style.width = g.video.width + 'px';
            video.style.height = g.video.height + 'px';
            const faces = [];
            for (const f of g.faces) {
              const r = document.createElementNS(SVG, 'rect');
              r.setAttribute('class', 'face');
              setRect(r, f.bounds);
              r.dataset.faceId = f.faceID;
              r.dataset.device = [f.deviceBounds.x, f.deviceBounds.y, f.deviceBounds.width, f.deviceBounds.height].join(',');
              faces.push(r, label(f.bounds.x + 2, f.bounds.y - 4, 'face ' + f.faceID + '  ' + f.score.toFixed(2)));
            }
            $('faces').replaceChildren(...faces);
            const codes = [];
            for (const c of g.codes) {
              const p = document.createElementNS(SVG, 'polygon');
              p.setAttribute('class', 'code');
              p.setAttribute('points', c.corners.map((q) => q.x + ',' + q.y).join(' '));
              const t = label(c.corners[0].x, c.corners[0].y - 4, c.text);
              t.classList.add('payload');
              codes.push(p, t);
            }
            $('codes').replaceChildren(...codes);
            // Moving regions: only numbers, and no more than the server's own limit.
            const moving = [];
            for (const m of (g.motion ? g.motion.regions : []).slice(0, MOTION_LIMIT)) {
              const r = document.createElementNS(SVG, 'rect');
              r.setAttribute('class', 'motion');
              setRect(r, m.bounds);
              r.dataset.device = [m.deviceBounds.x, m.deviceBounds.y, m.deviceBounds.width, m.deviceBounds.height].join(',');
              moving.push(r);
            }
            $('motion').replaceChildren(...moving);
            if (g.motion) $('motion').dataset.time = g.motion.time; else delete $('motion').dataset.time;
            setRect($('roi'), g.rectOfInterest);
            $('roi').dataset.device = [g.deviceRectOfInterest.x, g.deviceRectOfInterest.y,
                                       g.deviceRectOfInterest.width, g.deviceRectOfInterest.height].join(',');
            // What this drawing was computed for, so a reader can tell it is current.
            overlay.dataset.sequence = g.sequence;
            overlay.dataset.settings = [g.viewWidth, g.viewHeight, g.gravity, g.rotation, g.mirrored].join(',');
            $('rotation').value = String(g.rotation);
            $('mirrored').checked = g.mirrored;
          }

          // Live cameras: the local time of day; files and synthetic scenes: the position in them.
          function eventTime(e) {
            if (e.wallTime) {
              const d = new Date(e.wallTime);
              if (!isNaN(d)) return d.toLocaleTimeString();
            }
            return e.time.toFixed(2) + ' s';
          }

          function addEvent(e) {
            const li = document.createElement('li');
            li.textContent = eventTime(e) + '  ' + e.text;
            if (e.wallTime) li.title = e.wallTime;
            const list = $('events');
            list.prepend(li);
            while (list.children.length > 20) list.lastChild.remove();
          }

          function handle(m) {
            switch (m.type) {
              case 'geometry': drawGeometry(m); break;
              case 'tap': {
                const t = $('tap-result');
                t.textContent = m.message;
                t.dataset.deviceX = m.devicePoint.x;
                t.dataset.deviceY = m.devicePoint.y;
                t.dataset.set = m.pointOfInterestSet;
                t.dataset.focusSet = m.focusPointOfInterestSet;
                t.dataset.exposureSet = m.exposurePointOfInterestSet;
                t.className = m.pointOfInterestSet ? 'set' : '';
                break;
              }
              case 'photo': {
                const a = document.createElement('a');
                a.href = m.url;
                a.download = '';
                a.textContent = 'Download photo (' + m.width + '×' + m.height + ', ' + m.bytes + ' bytes)';
                $('photo-result').replaceChildren(a);
                break;
              }
              case 'event': addEvent(m); break;
              case 'stats': {
                const c = $('counters');
                const passed = m.passedThroughFrames || 0;
                c.textContent = (m.encodedFrames + passed) + ' frames shown of ' + m.capturedFrames + ' from the camera · ' +
                  m.viewers + (m.viewers === 1 ? ' viewer' : ' viewers') + ' · ' + m.skippedFrames + ' not searched (detection busy)';
                c.title = 'encoded here ' + m.encodedFrames + ', sent as the camera\'s own JPEG ' + passed +
                  ', skippedFrameCount ' + m.skippedFrames;
                c.dataset.encoded = m.encodedFrames;
                c.dataset.streamed = m.encodedFrames + passed;
                break;
              }
              case 'error': $('error').textContent = m.message; break;
            }
          }

          function connect() {
            const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
            socket = new WebSocket(scheme + '//' + location.host + base + '/ws');
            socket.onopen = () => {
              $('status').textContent = 'live';
              checkStatus();
              // A socket opened again means a new session may be serving: restart the video.
              if (socketOpened) startVideo();
              socketOpened = true;
              applyView();
            };
            socket.onmessage = (e) => handle(JSON.parse(e.data));
            socket.onclose = () => {
              if (streaming) $('status').textContent = 'reconnecting…';
              checkStatus();
              setTimeout(connect, 1000);
            };
          }

          function pointer(e) {
            const r = view.getBoundingClientRect();
            return { x: e.clientX - r.left, y: e.clientY - r.top };
          }

          overlay.addEventListener('pointerdown', (e) => {
            dragStart = pointer(e);
            overlay.setPointerCapture(e.pointerId);
          });
          overlay.addEventListener('pointermove', (e) => {
            if (!dragStart) return;
            const p = pointer(e), d = $('drag');
            setRect(d, { x: Math.min(p.x, dragStart.x), y: Math.min(p.y, dragStart.y),
                         width: Math.abs(p.x - dragStart.x), height: Math.abs(p.y - dragStart.y) });
            d.style.visibility = 'visible';
          });
          overlay.addEventListener('pointerup', (e) => {
            if (!dragStart) return;
            const p = pointer(e), s = dragStart;
            dragStart = null;
            $('drag').style.visibility = 'hidden';
            if (Math.abs(p.x - s.x) < 4 && Math.abs(p.y - s.y) < 4) {
              send({ type: 'tap', x: s.x, y: s.y });
            } else {
              send({ type: 'drag', x: Math.min(p.x, s.x), y: Math.min(p.y, s.y),
                     width: Math.abs(p.x - s.x), height: Math.abs(p.y - s.y) });
            }
          });
          for (const id of ['view-width', 'view-height', 'gravity']) $(id).addEventListener('change', applyView);
          for (const id of ['rotation', 'mirrored']) $(id).addEventListener('change', applyConnection);
          $('controls').addEventListener('submit', (e) => e.preventDefault());
          $('reset-roi').addEventListener('click', () => send({ type: 'resetRectOfInterest' }));
          $('photo').addEventListener('click', () => send({ type: 'photo' }));
          // A camera that is not streaming answers 503: say why, and start again once it is back.
          video.addEventListener('error', () => { streaming = false; checkStatus(); });
          checkStatus();
          applyView();
          connect();
        })();
        """#
}
