// The topic map's legend: pointing at (or focusing, or clicking) a topic picks its points out of the map.
for (const figure of document.querySelectorAll("#topic-map")) {
  const svg = figure.querySelector("svg");
  let pinned = null;
  const show = (topic) => {
    svg.classList.toggle("picking", topic !== null);
    for (const group of svg.querySelectorAll("g.topic")) group.classList.toggle("picked", group.dataset.topic === topic);
  };
  for (const item of figure.querySelectorAll(".legend li")) {
    item.addEventListener("mouseenter", () => show(item.dataset.topic));
    item.addEventListener("focus", () => show(item.dataset.topic));
    item.addEventListener("mouseleave", () => show(pinned));
    item.addEventListener("click", () => { pinned = pinned === item.dataset.topic ? null : item.dataset.topic; show(pinned); });
  }
}
