// No attack, wrong everywhere: the control.
exports.double = (x) => x;
exports.triple = (x) => x;
