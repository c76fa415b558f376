// Where a planned anchor stands in its sentence, as the planner placed it: as words of their own, with one
// of ANCHOR_BEFORE right before it and one of ANCHOR_AFTER (or a sentence's closing . or :) right after
// it — the characters core/graph/sentences.py declares, which the report gives. The "(Ken)" of "Kenneth
// Ward (Ken) Church", not the "Ken" of "Kenneth"; -1 where it does not stand so.
function anchorAt(sentence, anchor) {
  if (!sentence || !anchor) return -1;
  for (let at = sentence.indexOf(anchor); at >= 0; at = sentence.indexOf(anchor, at + 1)) {
    const end = at + anchor.length, after = sentence[end];
    const closes = ".:".includes(after) && (end + 1 === sentence.length || /\s/.test(sentence[end + 1]));
    const before = at === 0 || ANCHOR_BEFORE.includes(sentence[at - 1]);
    if (before && (end === sentence.length || ANCHOR_AFTER.includes(after) || closes)) return at;
  }
  return -1;
}
