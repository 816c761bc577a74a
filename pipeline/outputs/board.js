// The board both offline pages share, the puzzle book and the repertoire explorer (our own code, no
// library; MIT like the project): square names, a FEN placement read into squares, and the grid of
// square buttons a player clicks or drags on. Each page inlines this script before its own, so
// each stays one file that needs no network.
var diffimaxBoard = (function () {
  "use strict";
  var FILES = "abcdefgh";
  // The square at (row, col) of the grid, row 0 at the top, from White's side or Black's.
  function squareName(row, col, white) {
    return white ? FILES[col] + (8 - row) : FILES[7 - col] + (row + 1);
  }
  // A FEN placement ("rnbqkbnr/pppppppp/8/...") as {square: piece letter}.
  function placement(text) {
    var squares = {};
    var rows = text.split("/");
    for (var r = 0; r < 8; r++) {
      var col = 0;
      for (var i = 0; i < rows[r].length; i++) {
        var ch = rows[r][i];
        if (ch >= "1" && ch <= "8") {
          col += Number(ch);
        } else {
          squares[FILES[col] + (8 - r)] = ch;
          col += 1;
        }
      }
    }
    return squares;
  }
  // 64 buttons in `grid`, top-left first, as {square: button}; the top-left one is reached by Tab
  // when `tabbable` (the book moves between squares with the arrow keys from there).
  function squareButtons(grid, white, tabbable) {
    var buttons = {};
    for (var row = 0; row < 8; row++) {
      for (var col = 0; col < 8; col++) {
        var name = squareName(row, col, white);
        var button = document.createElement("button");
        button.type = "button";
        button.className = "sq";
        button.setAttribute("data-square", name);
        button.setAttribute("aria-label", name);
        button.tabIndex = tabbable && row === 0 && col === 0 ? 0 : -1;
        grid.appendChild(button);
        buttons[name] = button;
      }
    }
    return buttons;
  }
  return { FILES: FILES, squareName: squareName, placement: placement, squareButtons: squareButtons };
})();
