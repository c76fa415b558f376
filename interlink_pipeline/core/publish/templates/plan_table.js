// The plan table's rows open on a click: the row's expansion (its hidden columns, set on the row when
// DataTables made it) below it, built of text nodes; a second click, or any redraw, closes it.
document.addEventListener("click", (event) => {
  const row = event.target.closest("#plan tbody tr.expandable");
  if (!row) return;
  const next = row.nextElementSibling;
  if (next && next.classList.contains("expansion")) { next.remove(); row.classList.remove("open"); return; }
  const fields = new Map(JSON.parse(row.dataset.expansion));
  const anchor = row.cells[1].textContent, sentence = fields.get("sentence") || "";
  const cell = document.createElement("td"); cell.colSpan = row.cells.length;
  const said = document.createElement("p"); said.className = "sentence";
  const at = anchorAt(sentence, anchor);
  if (at >= 0) {
    const mark = document.createElement("mark"); mark.textContent = anchor;
    said.append(sentence.slice(0, at), mark, sentence.slice(at + anchor.length));
  } else {
    said.append(sentence || "No sentence: it goes where the row says.");
  }
  cell.append(said);
  const list = document.createElement("dl");
  for (const name of ["why", "confidence", "on page title", "on page URL", "link to title", "link to URL"]) {
    const term = document.createElement("dt"); term.textContent = name;
    const value = document.createElement("dd"); value.textContent = fields.get(name) || "–";
    list.append(term, value);
  }
  cell.append(list);
  const expansion = document.createElement("tr"); expansion.className = "expansion"; expansion.append(cell);
  row.after(expansion); row.classList.add("open");
});
