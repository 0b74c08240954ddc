import CaptureJobs
/// The preview's page, script and style, embedded in the binary (no CDN, no bundle resources:
/// the box may be offline, and resources would not travel with the executable).
///
/// The script draws what the server sends and nothing else: the frame's rect, face boxes and
/// code outlines arrive in layer space, computed by `CaptureVideoPreviewLayer`. Text that came
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

    /// The list of cameras at `/`.
    package static func listPage(_ names: [String]) -> String {
        let items = names.map { "<li><a href=\"/cameras/\(escaped($0))\">\(escaped($0))</a></li>" }.joined()
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>cvcam preview</title>
            <link rel="stylesheet" href="/assets/preview.css"></head>
            <body><h1>cvcam preview</h1><ul id="cameras">\(items)</ul></body></html>
            """
    }

    /// One camera's page; `base` is its path (`/cameras/<name>`).
    package static func page(name: String, base: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>cvcam preview: \(escaped(name))</title>
        <link rel="stylesheet" href="/assets/preview.css">
        </head>
        <body data-base="\(escaped(base))">
        <header>
          <h1>cvcam preview: <span id="camera-name">\(escaped(name))</span></h1>
          <span id="status">connecting…</span>
        </header>
        <form id="controls">
          <label>View <input id="view-width" type="number" min="1" max="16384" value="640"> ×
            <input id="view-height" type="number" min="1" max="16384" value="480"></label>
          <label>Gravity <select id="gravity">
            <option value="resizeAspect">fit (resizeAspect)</option>
            <option value="resizeAspectFill">fill (resizeAspectFill)</option>
            <option value="resize">stretch (resize)</option>
          </select></label>
          <label>Rotation <select id="rotation">
            <option value="0">0°</option><option value="90">90°</option>
            <option value="180">180°</option><option value="270">270°</option>
          </select></label>
          <label><input id="mirrored" type="checkbox"> Mirrored</label>
          <button id="reset-roi" type="button">Whole frame</button>
          <button id="photo" type="button">Take photo</button>
        </form>
        <main>
          <div id="view">
            <img id="video" alt="live video">
            <svg id="overlay" xmlns="http://www.w3.org/2000/svg">
              <rect id="roi" class="roi"></rect>
              <g id="faces"></g>
              <g id="codes"></g>
              <rect id="drag" class="drag"></rect>
            </svg>
          </div>
          <aside>
            <p id="counters">no frames yet</p>
            <p id="tap-result">Click the video to convert a point; drag to set the rect of interest.</p>
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
        .drag { fill: rgba(63, 169, 255, 0.15); stroke: #3fa9ff; stroke-width: 1; visibility: hidden; }
        .label { fill: #fff; font: 13px system-ui, sans-serif; paint-order: stroke; stroke: #000; stroke-width: 3px; }
        aside { max-width: 420px; overflow-wrap: anywhere; }
        #events { font: 12px ui-monospace, monospace; padding-left: 20px; }
        #error { color: #b00020; }
        #tap-result.set { color: #006400; }
        """

    package static let script = #"""
        'use strict';
        // Draws what the server computes; the only numbers made here are the view's own size and
        // the pointer's position in it (a layer point, by definition).
        (function () {
          const base = document.body.dataset.base;
          const $ = (id) => document.getElementById(id);
          const SVG = 'http://www.w3.org/2000/svg';
          const view = $('view'), overlay = $('overlay'), video = $('video');
          let socket = null;
          let dragStart = null;
          let socketOpened = false, videoStarts = 0;
          function startVideo() {
            videoStarts += 1;
            video.src = base + '/stream.mjpeg?start=' + videoStarts;
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
            setRect($('roi'), g.rectOfInterest);
            $('roi').dataset.device = [g.deviceRectOfInterest.x, g.deviceRectOfInterest.y,
                                       g.deviceRectOfInterest.width, g.deviceRectOfInterest.height].join(',');
            // What this drawing was computed for, so a reader can tell it is current.
            overlay.dataset.sequence = g.sequence;
            overlay.dataset.settings = [g.viewWidth, g.viewHeight, g.gravity, g.rotation, g.mirrored].join(',');
            $('rotation').value = String(g.rotation);
            $('mirrored').checked = g.mirrored;
          }

          function addEvent(e) {
            const li = document.createElement('li');
            li.textContent = e.time.toFixed(2) + ' s  ' + e.text;
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
                c.textContent = 'frames streamed ' + (m.encodedFrames + passed) + ' (encoded ' + m.encodedFrames +
                  ', the camera\'s own JPEG ' + passed + '), captured ' + m.capturedFrames +
                  ', viewers ' + m.viewers + ', skipped by detection ' + m.skippedFrames;
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
              // A socket opened again means a new session may be serving: restart the video.
              if (socketOpened) startVideo();
              socketOpened = true;
              applyView();
            };
            socket.onmessage = (e) => handle(JSON.parse(e.data));
            socket.onclose = () => { $('status').textContent = 'disconnected, retrying…'; setTimeout(connect, 1000); };
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
          // A camera that is not running yet answers 503: try again every second.
          video.addEventListener('error', () => setTimeout(startVideo, 1000));
          startVideo();
          applyView();
          connect();
        })();
        """#
}
