(() => {
  const data = JSON.parse(document.getElementById("drilldown-data").textContent);
  const pages = data.pages, byUrl = new Map(pages.map((page, i) => [page[0], i]));
  const byTitle = new Map(pages.map((page, i) => [page[1].trim().toLowerCase(), i]).reverse());
  const plannedOut = pages.map(() => []), plannedIn = pages.map(() => []);
  const linksIn = pages.map(() => []), linksOut = pages.map(() => []);
  for (const row of data.planned) {
    const [s, t, anchor, why, confidence, probability, status, linkId, sentence, placement] = row;
    const link = {s, t, anchor, why, confidence, probability, status, linkId, sentence, placement};
    plannedOut[s].push(link); plannedIn[t].push(link);
    const said = `planned: ${why} · ${confidence} · ${status}`;
    linksOut[s].push([t, anchor, said]); linksIn[t].push([s, anchor, said]);
  }
  const live = new Set(data.live.map(([s, t]) => `${s} ${t}`));
  for (const [s, t, anchor] of data.now) {
    const state = live.has(`${s} ${t}`) ? "now: live, from the plan" : "now";
    linksOut[s].push([t, anchor || "", state]); linksIn[t].push([s, anchor || "", state]);
  }
  const input = document.getElementById("drilldown-page"), view = document.getElementById("drilldown-view");
  const choices = document.getElementById("drilldown-pages");
  for (const page of pages) {
    const option = document.createElement("option"); option.value = page[0]; option.label = page[1];
    choices.append(option);
  }
  const element = (tag, text, className) => {
    const node = document.createElement(tag); if (text !== undefined) node.textContent = text;
    if (className) node.className = className; return node;
  };
  const say = (value) => value === null || value === undefined ? "–" : value;

  // the editor's decisions, by link id, and their notes: what the download holds
  const decisions = new Map(), notes = new Map();
  const counts = document.getElementById("decision-counts");
  const download = document.getElementById("decisions-download");
  function decide(link, decision) {
    if (decision) decisions.set(link.linkId, {link, decision}); else decisions.delete(link.linkId);
    const values = [...decisions.values()].map((d) => d.decision);
    const accepted = values.filter((d) => d === "accept").length;
    counts.textContent = `${accepted} accepted · ${values.length - accepted} rejected`;
    download.disabled = decisions.size === 0;
  }
  function note(link, text) { if (text.trim()) notes.set(link.linkId, text.trim()); else notes.delete(link.linkId); }
  const csvCell = (text) => /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  download.addEventListener("click", () => {
    const lines = [["link_id", "source_url", "target_url", "decision", "note"].join(",")];
    for (const {link, decision} of decisions.values()) {
      const row = [link.linkId, pages[link.s][0], pages[link.t][0], decision, notes.get(link.linkId) || ""];
      lines.push(row.map(csvCell).join(","));
    }
    const file = new Blob(["\ufeff" + lines.join("\r\n") + "\r\n"], {type: "text/csv"});
    const a = document.createElement("a");
    a.href = URL.createObjectURL(file); a.download = `decisions-${data.site || "site"}.csv`;
    document.body.append(a); a.click(); a.remove(); URL.revokeObjectURL(a.href);
  });

  function pageButton(i) {  // the page's title, its URL under it; a click shows that page
    const button = element("button", pages[i][1] || pages[i][0], "page-link"); button.type = "button";
    button.addEventListener("click", () => show(i));
    const cell = element("div"); cell.append(button, element("div", pages[i][0], "url")); return cell;
  }
  function figure(i, k) {  // a PAGE_FIGURES column of page i, before → after
    const before = pages[i][2 + 2 * k], after = pages[i][3 + 2 * k];
    return `${say(before)} → ${say(after)}`;
  }
  function placed(link) {  // the sentence with the anchor marked, else the named place
    const p = element("p", undefined, "sentence");
    const at = anchorAt(link.sentence, link.anchor);
    if (at >= 0) {
      p.append(link.sentence.slice(0, at), element("mark", link.anchor),
               link.sentence.slice(at + link.anchor.length));
    } else {
      const where = data.placements[link.placement] || "place it in the text";
      p.append(`${where[0].toUpperCase()}${where.slice(1)}: `, element("mark", link.anchor));
    }
    return p;
  }
  function choice(link) {  // accept / reject / undecided and a note, kept across pages
    const group = element("div", undefined, "decision");
    const current = decisions.get(link.linkId)?.decision || "";
    for (const [value, label] of [["accept", "accept"], ["reject", "reject"], ["", "undecided"]]) {
      const radio = document.createElement("input");
      radio.type = "radio"; radio.name = `decision-${link.linkId}`; radio.value = value;
      radio.checked = value === current;
      radio.addEventListener("change", () => decide(link, value));
      const wrap = element("label"); wrap.append(radio, ` ${label}`); group.append(wrap);
    }
    const text = document.createElement("input");
    text.type = "text"; text.className = "note"; text.placeholder = "note (why)"; text.size = 30;
    text.value = notes.get(link.linkId) || ""; text.setAttribute("aria-label", "note");
    text.addEventListener("input", () => note(link, text.value));
    group.append(text);
    return group;
  }
  // one decision for a set of the page's links (all of them, or its list's additions), with one note
  function bulk(links, i, mode) {
    const bar = element("div", undefined, "bulk");
    const listing = mode === "in" ? [] : links.filter((link) => link.placement === "listing");
    const text = document.createElement("input");
    text.type = "text"; text.className = "bulk-note"; text.placeholder = "note for these decisions"; text.size = 30;
    text.setAttribute("aria-label", "note for these decisions");
    const apply = (chosen, decision) => {
      for (const link of chosen) { decide(link, decision); if (decision && text.value.trim()) note(link, text.value); }
      show(i);
    };
    const group = (label, chosen) => {
      const span = element("span", `${label}: `, "bulk-group");
      for (const [decision, word] of [["accept", "accept all"], ["reject", "reject all"], ["", "clear"]]) {
        const button = element("button", word); button.type = "button";
        button.addEventListener("click", () => apply(chosen, decision));
        span.append(button, " ");
      }
      return span;
    };
    const all = mode === "in" ? `All ${links.length} links into this page` : `All ${links.length} links on this page`;
    bar.append(group(all, links));
    if (listing.length && listing.length < links.length) {
      bar.append(group(`The ${listing.length} additions to this page's list`, listing));
    }
    bar.append(text);
    return bar;
  }
  function actions(i, mode) {
    const links = mode === "in" ? plannedIn[i] : plannedOut[i];
    const list = element("ol", undefined, "actions");
    for (const link of links) {
      const other = mode === "in" ? link.s : link.t;
      const item = element("li", undefined, "action"); item.dataset.linkId = link.linkId;
      const where = element("div", undefined, "where");
      where.append(element("span", mode === "in" ? "on " : "link to "), pageButton(other));
      if (mode !== "in") {
        where.append(element("span", `links in ${figure(other, 1)} · clicks from home ${figure(other, 0)}`,
                             "target-figures"));
      }
      item.append(where, placed(link),
                  element("p", `${link.why} · ${link.confidence} · probability ${link.probability}`, "why"),
                  choice(link));
      list.append(item);
    }
    const caption = mode === "in"
      ? `Links the plan adds into this page: ${links.length}`
      : `Links to add on this page: ${links.length}`;
    const section = element("section", undefined, "to-do"); section.append(element("h4", caption));
    if (links.length) section.append(bulk(links, i, mode));
    section.append(list);
    return section;
  }
  function linkTable(caption, links) {
    const table = element("table"); table.createCaption().textContent = `${caption}: ${links.length}`;
    const head = table.createTHead().insertRow();
    for (const name of ["page", "anchor", "link"]) head.append(element("th", name));
    const body = table.createTBody();
    for (const [other, anchor, state] of links) {
      const row = body.insertRow(); row.className = state.startsWith("now") ? "now" : "planned";
      row.insertCell().append(pageButton(other));
      for (const text of [anchor, state]) row.insertCell().textContent = text;
    }
    return table;
  }
  const modes = [...document.querySelectorAll("input[name='drilldown-mode']")];
  const mode = () => modes.find((m) => m.checked)?.value || "out";
  let shown = null;
  function show(i) {
    shown = i;
    const page = pages[i];
    input.value = page[0];
    const figures = data.figures.map((name, k) => `${name} ${figure(i, k)}`);
    view.replaceChildren(
      element("h3", page[1] || page[0]), element("p", page[0], "page-url"), element("p", figures.join(" · ")),
      actions(i, mode()), element("div", undefined, "drilldown-lists"));
    view.lastChild.append(
      linkTable("in-content links in", linksIn[i]), linkTable("in-content links out", linksOut[i]));
  }
  for (const radio of modes) radio.addEventListener("change", () => { if (shown !== null) show(shown); });
  input.addEventListener("change", () => {
    const wanted = input.value.trim();
    const i = byUrl.get(wanted) ?? byTitle.get(wanted.toLowerCase());
    if (i === undefined) view.replaceChildren(element("p", `No page ${wanted} among the pages listed.`));
    else show(i);
  });
  if (pages.length) show(0);
})();
