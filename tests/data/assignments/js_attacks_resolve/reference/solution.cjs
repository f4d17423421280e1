// The reference solution: full marks in both modes.
exports.double = (x) => 2 * x;
exports.triple = (x) => 3 * x;
