// The harness viewer's only script (served as a file: the Content-Security-Policy allows no
// inline script). It enhances pages that work without it: links load fragments in place,
// the slider time-travels, the log pages on as it scrolls, a running session updates live.
// Every fragment is HTML the server rendered and escaped; this script never builds markup
// from session text (it sets textContent, or imports server-escaped nodes).
"use strict";

(function () {
  const violations = [];
  document.addEventListener("securitypolicyviolation", function (event) {
    violations.push(event.violatedDirective);
    document.documentElement.dataset.cspViolations = String(violations.length);
  });

  function parseFragment(html) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const out = document.createDocumentFragment();
    for (const node of Array.from(doc.body.childNodes)) out.appendChild(document.importNode(node, true));
    return out;
  }

  async function fetchText(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { "x-requested-with": "viewer" } });
    const text = await response.text();
    if (!response.ok) throw new Error(text || response.statusText);
    return text;
  }

  function withParams(path, params) {
    const url = new URL(path, window.location.origin);
    for (const [key, value] of Object.entries(params)) {
      if (Array.isArray(value)) value.forEach((v) => v && url.searchParams.append(key, v));
      else if (value !== null && value !== undefined && value !== "") url.searchParams.set(key, String(value));
    }
    return url.pathname + url.search;
  }

  // ---- the sessions list: turns and size, fetched one session at a time --------------------
  async function fillSummaries() {
    const rows = document.querySelectorAll("#sessions tbody tr[data-id]");
    for (const row of rows) {
      if (row.classList.contains("damaged")) continue;
      try {
        const response = await fetch(withParams("/api/summary", { id: row.dataset.id }), { credentials: "same-origin" });
        if (!response.ok) throw new Error(String(response.status));
        const found = await response.json();
        row.querySelector(".turns").textContent = String(found.turns);
        row.querySelector(".size").textContent = humanSize(found.wireBytes);
      } catch (error) {
        row.querySelector(".turns").textContent = "?";
        row.querySelector(".size").textContent = "?";
      }
    }
  }

  function humanSize(count) {
    const units = ["B", "kB", "MB", "GB"];
    let size = count;
    let unit = 0;
    while (size >= 1000 && unit < units.length - 1) {
      size /= 1000;
      unit += 1;
    }
    return unit === 0 ? `${size} B` : `${size.toFixed(1)} ${units[unit]}`;
  }

  // ---- the session page --------------------------------------------------------------------
  function sessionPage(page) {
    const sid = page.dataset.sid;
    const state = {
      length: Number(page.dataset.length),
      at: page.dataset.at === "" ? null : Number(page.dataset.at),
      seq: page.dataset.seq === "" ? null : Number(page.dataset.seq),
      q: page.dataset.q,
      types: page.dataset.types ? page.dataset.types.split(" ") : [],
      classes: page.dataset.classes ? page.dataset.classes.split(" ") : [],
    };
    const rows = document.getElementById("rows");
    const detail = document.getElementById("detail");
    const surface = document.getElementById("surface");
    const requestPane = document.getElementById("request");
    const slider = document.getElementById("tt");
    const seqBox = document.getElementById("tt-seq");
    const filter = () => ({ id: sid, q: state.q, type: state.types, class: state.classes });

    function remember() {
      const url = new URL(window.location.href);
      if (state.seq !== null) url.searchParams.set("seq", String(state.seq));
      if (state.at !== null) url.searchParams.set("at", String(state.at));
      url.searchParams.delete("start");
      url.hash = state.seq !== null ? `e-${state.seq}` : "";
      history.replaceState(null, "", url.pathname + url.search + url.hash);
    }

    function light(seqs, cls) {
      document.querySelectorAll(`.${cls}`).forEach((el) => el.classList.remove(cls));
      for (const seq of seqs) {
        const row = document.getElementById(`e-${seq}`);
        if (row) {
          row.classList.add(cls);
          const fold = row.closest("details.chunks");
          if (fold && cls === "lit") fold.open = true;
        }
      }
    }

    async function select(seq, scroll) {
      state.seq = seq;
      document.querySelectorAll(".row.selected, .node.selected").forEach((el) => el.classList.remove("selected"));
      let row = document.getElementById(`e-${seq}`);
      if (!row) {
        await loadLogAt(seq);
        row = document.getElementById(`e-${seq}`);
      }
      if (row) {
        row.classList.add("selected");
        const fold = row.closest("details.chunks");
        if (fold) fold.open = true;
        if (scroll) row.scrollIntoView({ block: "center" });
      }
      try {
        detail.replaceChildren(parseFragment(await fetchText(withParams("/session/event", { id: sid, seq: seq }))));
      } catch (error) {
        detail.textContent = String(error.message || error);
      }
      const view = detail.querySelector(".event-detail");
      const related = view && view.dataset.related ? view.dataset.related.split(" ").map(Number) : [seq];
      light(related, "lit");
      const node = document.getElementById(`n-${seq}`);
      document.querySelectorAll(".node.lit").forEach((el) => el.classList.remove("lit"));
      if (node) {
        node.classList.add("selected");
        node.scrollIntoView({ block: "nearest" });
      } else if (row && row.dataset.shadowedBy) {
        const by = document.getElementById(`n-${row.dataset.shadowedBy}`);
        if (by) by.classList.add("lit");
      }
      remember();
    }

    async function loadLogAt(seq) {
      const start = Math.max(0, seq - 20);
      const html = await fetchText(withParams("/session/log", { ...filter(), start: start }));
      rows.replaceChildren(parseFragment(html));
      watchLater();
    }

    async function loadPage(link) {
      const earlier = link.classList.contains("earlier");
      const html = await fetchText(withParams("/session/log", { ...filter(), start: link.dataset.start }));
      const fragment = parseFragment(html);
      const holder = link.closest(".log-page");
      link.remove();
      if (earlier) {
        const before = rows.scrollHeight;
        rows.insertBefore(fragment, holder);
        rows.scrollTop += rows.scrollHeight - before;
      } else {
        holder.after(fragment);
      }
      watchLater();
    }

    let observer = null;
    function watchLater() {
      if (!("IntersectionObserver" in window)) return;
      if (observer) observer.disconnect();
      observer = new IntersectionObserver((entries) => {
        for (const entry of entries) {
          if (entry.isIntersecting && entry.target.isConnected && !entry.target.dataset.loading) {
            entry.target.dataset.loading = "1";
            loadPage(entry.target).catch(() => delete entry.target.dataset.loading);
          }
        }
      }, { root: rows, rootMargin: "400px" });
      rows.querySelectorAll("a.page-link.later").forEach((link) => observer.observe(link));
    }

    async function travel(at) {
      if (!Number.isInteger(at) || at < 0 || at >= state.length) return;
      state.at = at;
      if (slider) slider.value = String(at);
      if (seqBox) seqBox.value = String(at);
      try {
        surface.replaceChildren(parseFragment(await fetchText(withParams("/session/surface", { id: sid, at: at }))));
      } catch (error) {
        surface.textContent = String(error.message || error);
      }
      document.querySelectorAll("#request .at").forEach((el) => (el.textContent = String(at)));
      if (requestPane && requestPane.open) await loadRequest();
      moveCursor(at);
      remember();
    }

    async function loadRequest() {
      const body = requestPane.querySelector(".body");
      body.textContent = "loading…";
      try {
        body.replaceChildren(parseFragment(await fetchText(withParams("/session/request", { id: sid, at: state.at }))));
      } catch (error) {
        body.textContent = String(error.message || error);
      }
    }

    function moveCursor(at) {
      const svg = document.querySelector("#chart svg");
      if (!svg) return;
      const x0 = Number(svg.dataset.x0), x1 = Number(svg.dataset.x1), last = Number(svg.dataset.last);
      const x = x0 + ((x1 - x0) * at) / Math.max(last, 1);
      const cursor = svg.querySelector(".cursor");
      if (cursor) {
        cursor.setAttribute("x1", String(x));
        cursor.setAttribute("x2", String(x));
      }
    }

    async function loadChart() {
      const box = document.getElementById("chart");
      const holder = box.querySelector(".chart-holder");
      try {
        const text = await fetchText(box.dataset.src);
        const doc = new DOMParser().parseFromString(text, "image/svg+xml");
        const svg = doc.documentElement;
        if (svg.nodeName !== "svg") throw new Error("not an SVG chart");
        holder.replaceChildren(document.importNode(svg, true));
        const shown = holder.querySelector("svg");
        shown.addEventListener("click", (event) => {
          const box = shown.getBoundingClientRect();
          const width = Number(shown.dataset.width);
          const x = ((event.clientX - box.left) / box.width) * width;
          const x0 = Number(shown.dataset.x0), x1 = Number(shown.dataset.x1), last = Number(shown.dataset.last);
          const seq = Math.round(((Math.min(Math.max(x, x0), x1) - x0) / (x1 - x0)) * last);
          travel(seq);
        });
        if (state.at !== null) moveCursor(state.at);
      } catch (error) {
        holder.textContent = `the chart could not be drawn: ${error.message || error}`;
      }
    }

    async function loadSections() {
      const box = document.getElementById("sections");
      try {
        box.replaceChildren(parseFragment(await fetchText(box.dataset.src)));
      } catch (error) {
        box.textContent = String(error.message || error);
      }
    }

    function fold(button) {
      const row = button.closest(".row");
      const folded = !row.classList.contains("folded");
      row.classList.toggle("folded", folded);
      button.textContent = folded ? "▸" : "▾";
      const turn = row.dataset.turn;
      const step = row.dataset.step;
      const isTurn = row.dataset.type === "turn/start";
      rows.querySelectorAll(`.row[data-turn="${CSS.escape(turn)}"]`).forEach((other) => {
        if (other === row) return;
        if (!isTurn && other.dataset.step !== step) return;
        other.classList.toggle(isTurn ? "hidden-turn" : "hidden-step", folded);
      });
    }

    page.addEventListener("click", (event) => {
      const target = event.target instanceof Element ? event.target : null;
      if (!target) return;
      const button = target.closest("button.fold");
      if (button) {
        fold(button);
        return;
      }
      const pager = target.closest("a.page-link");
      if (pager) {
        event.preventDefault();
        loadPage(pager);
        return;
      }
      const more = target.closest("a.more-nodes");
      if (more) {
        event.preventDefault();
        fetchText(more.getAttribute("href")).then((html) => more.replaceWith(parseFragment(html)));
        return;
      }
      const travelLink = target.closest("a[data-at]");
      if (travelLink) {
        event.preventDefault();
        travel(Number(travelLink.dataset.at));
        return;
      }
      const link = target.closest("a[data-seq]");
      if (link) {
        event.preventDefault();
        select(Number(link.dataset.seq), true);
        return;
      }
      const node = target.closest("li.node");
      if (node) selectNode(node);
    });

    function selectNode(node) {
      document.querySelectorAll(".node.selected").forEach((el) => el.classList.remove("selected"));
      node.classList.add("selected");
      const related = node.dataset.related ? node.dataset.related.split(" ").map(Number) : [];
      light(related, "lit");
      const own = document.getElementById(`e-${node.dataset.seq}`);
      if (own) {
        document.querySelectorAll(".row.selected").forEach((el) => el.classList.remove("selected"));
        own.classList.add("selected");
        own.scrollIntoView({ block: "center" });
      } else {
        select(Number(node.dataset.seq), true); // not on a loaded page: load the log around it
      }
    }

    page.addEventListener("keydown", (event) => {
      const target = event.target instanceof Element ? event.target.closest("li.node") : null;
      if (target && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        selectNode(target);
      }
    });

    if (slider) {
      let timer = null;
      slider.addEventListener("input", () => {
        seqBox.value = slider.value;
        clearTimeout(timer);
        timer = setTimeout(() => travel(Number(slider.value)), 120);
      });
      document.getElementById("timetravel").addEventListener("submit", (event) => {
        event.preventDefault();
        travel(Number(seqBox.value));
      });
    }
    if (requestPane) requestPane.addEventListener("toggle", () => requestPane.open && loadRequest());

    // ---- live: the stored log grew -------------------------------------------------------
    function live() {
      if (!("EventSource" in window)) return;
      const status = document.getElementById("live-state");
      const source = new EventSource(withParams("/session/live", { id: sid, from: state.length }));
      const show = (found) => {
        if (found.open) {
          status.textContent = found.owner ? `live: a turn is running, owner ${found.owner}` : "live: a turn is running";
          status.className = "running";
        } else if (found.last) {
          const when = new Date(found.last.time).toISOString().replace("T", " ").slice(0, 19);
          status.textContent = `ended: turn closed at seq ${found.last.seq} (${found.last.reason || "?"}), ${when} UTC`;
          status.className = "idle";
        } else {
          status.textContent = "no turn yet";
        }
        page.dataset.live = found.open ? "running" : "ended";
      };
      source.addEventListener("state", (event) => show(JSON.parse(event.data)));
      source.addEventListener("grown", async (event) => {
        const found = JSON.parse(event.data);
        show(found);
        const old = state.length;
        if (found.length <= old) return;
        const following = state.at === old - 1;
        state.length = found.length;
        document.getElementById("length").textContent = String(found.length);
        if (slider) {
          slider.max = String(found.length - 1);
          seqBox.max = String(found.length - 1);
        }
        if (!rows.querySelector("a.page-link.later")) {
          const html = await fetchText(withParams("/session/log", { ...filter(), start: old }));
          const holders = rows.querySelectorAll(".log-page");
          const last = holders[holders.length - 1];
          if (last) last.after(parseFragment(html));
          else rows.appendChild(parseFragment(html));
          watchLater();
        }
        if (following) await travel(found.length - 1);
        page.dataset.grown = String(found.length);
      });
    }

    loadChart();
    loadSections();
    watchLater();
    live();
    if (state.seq !== null) {
      const row = document.getElementById(`e-${state.seq}`);
      if (row) {
        row.classList.add("selected");
        row.scrollIntoView({ block: "center" });
        const view = detail.querySelector(".event-detail");
        if (view && view.dataset.related) light(view.dataset.related.split(" ").map(Number), "lit");
      }
    }
    page.dataset.ready = "1";
  }

  document.addEventListener("DOMContentLoaded", () => {
    const page = document.getElementById("page");
    if (page) sessionPage(page);
    if (document.getElementById("sessions")) fillSummaries();
  });
})();
