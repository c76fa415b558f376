(() => {
  const data = JSON.parse(document.getElementById("drilldown-data").textContent);
  const pages = data.pages, byUrl = new Map(pages.map((page, i) => [page[0], i]));
  const linksIn = pages.map(() => []), linksOut = pages.map(() => []);
  for (const [s, t, anchor, why, probability, status] of data.planned) {
    const planned = `planned: ${why}` + (probability === null ? "" : ` (probability ${probability})`)
      + ` · ${status}`;
    linksOut[s].push([t, anchor, planned]); linksIn[t].push([s, anchor, planned]);
  }
  const live = new Set(data.live.map(([s, t]) => `${s} ${t}`));
  for (const [s, t] of data.now) {
    const state = live.has(`${s} ${t}`) ? "now: live, from the plan" : "now";
    linksOut[s].push([t, "", state]); linksIn[t].push([s, "", state]);
  }
  const input = document.getElementById("drilldown-page"), view = document.getElementById("drilldown-view");
  const choices = document.getElementById("drilldown-pages");
  for (const page of pages) {
    const option = document.createElement("option"); option.value = page[0]; choices.append(option);
  }
  const element = (tag, text, className) => {
    const node = document.createElement(tag); if (text !== undefined) node.textContent = text;
    if (className) node.className = className; return node;
  };
  function pageButton(i) {  // the page's title, its URL under it; a click shows that page
    const button = element("button", pages[i][1] || pages[i][0], "page-link"); button.type = "button";
    button.addEventListener("click", () => show(i));
    const cell = element("div"); cell.append(button, element("div", pages[i][0], "url")); return cell;
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
  function show(i) {
    const page = pages[i];
    input.value = page[0];
    const figures = data.figures.map((name, k) => {
      const before = page[2 + 2 * k], after = page[3 + 2 * k];
      const say = (value) => value === null ? "–" : value;
      return `${name} ${say(before)} → ${say(after)}`;
    });
    view.replaceChildren(
      element("h3", page[1] || page[0]), element("p", page[0], "page-url"), element("p", figures.join(" · ")),
      element("div", undefined, "drilldown-lists"));
    view.lastChild.append(
      linkTable("in-content links in", linksIn[i]), linkTable("in-content links out", linksOut[i]));
  }
  input.addEventListener("change", () => {
    const i = byUrl.get(input.value.trim());
    if (i === undefined) view.replaceChildren(element("p", `No page ${input.value} among the pages listed.`));
    else show(i);
  });
  if (pages.length) show(0);
})();
