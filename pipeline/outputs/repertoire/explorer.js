// The diffimax repertoire explorer: click through the tree on the puzzle book's board (our own
// code, no library; MIT like the project). The tree, its figures (formatted from the Parquet rows
// by the generator) and the piece images are in the explorer's data-tree attribute:
// {"orientation": "white"|"black", "pieces": {"P": dataUri, ...}, "start": "<PGN tags and moves
// before the tree>", "nodes": [{"id", "parent", "san", "uci", "mover", "toMove", "placement",
// "label", "children": [id...], "cells": {...}, "traps": [...], and for the drill "recommended",
// "p", "share", "trap": {"loss", "punish", "punishUci"}}, ...], "drill": {"key", "player",
// "opponent", "rating", "before"}}.
// Click a move in the table, or a piece and its square on the board; Back goes up a ply; the
// line's buttons jump; Export shows the line as PGN. Drill switches to the drill (drill.js) on
// the same board.
(function () {
  "use strict";
  // The book's style shows the board and its buttons only when a script runs (a page without one
  // would offer buttons that do nothing): say that this one does.
  document.documentElement.className += " js";
  var placement = diffimaxBoard.placement;
  var COLUMNS = ["move", "p", "value", "expected", "gain", "grown", "traps", "works", "seen", "score"];
  function setup(root) {
    var data = JSON.parse(root.getAttribute("data-tree"));
    var nodes = {};
    data.nodes.forEach(function (node) {
      nodes[node.id] = node;
    });
    var grid = root.querySelector(".grid");
    var status = root.querySelector(".status");
    var line = root.querySelector(".line");
    var body = root.querySelector("table.moves tbody");
    var traps = root.querySelector(".traps");
    var exported = root.querySelector("textarea.pgn");
    var white = data.orientation === "white";
    var state = { node: 0, selected: null };
    var buttons = diffimaxBoard.squareButtons(grid, white, false);
    function cell(text, kind) {
      var td = document.createElement("td");
      td.textContent = text;
      td.className = kind;
      return td;
    }
    // The pieces of `squares` ({square: piece letter}) on the board, the move `uci` marked.
    function drawSquares(squares, uci) {
      for (var name in buttons) {
        var piece = squares[name];
        var b = buttons[name];
        b.style.backgroundImage = piece ? "url(" + data.pieces[piece] + ")" : "none";
        b.classList.remove("from", "to", "last");
        b.setAttribute("aria-label", name + (piece ? " " + piece : ""));
      }
      if (uci) {
        buttons[uci.slice(0, 2)].classList.add("last");
        buttons[uci.slice(2, 4)].classList.add("last");
      }
    }
    function drawBoard(node) {
      drawSquares(placement(node.placement), node.uci);
    }
    function drawLine(node) {
      var path = [];
      for (var n = node; n; n = n.parent === null ? null : nodes[n.parent]) {
        path.unshift(n);
      }
      line.textContent = "";
      path.forEach(function (n, index) {
        var b = document.createElement("button");
        b.type = "button";
        b.className = "step";
        b.setAttribute("data-node", n.id);
        b.textContent = index === 0 ? "Start" : n.label;
        line.appendChild(b);
      });
      return path;
    }
    function drawMoves(node) {
      body.textContent = "";
      node.children.forEach(function (id) {
        var child = nodes[id];
        var tr = document.createElement("tr");
        tr.setAttribute("data-node", id);
        tr.className = child.cells.mark;
        var first = document.createElement("td");
        var go = document.createElement("button");
        go.type = "button";
        go.className = "go";
        go.setAttribute("data-node", id);
        go.textContent = child.san;
        first.appendChild(go);
        first.className = "move";
        tr.appendChild(first);
        COLUMNS.slice(1).forEach(function (column) {
          tr.appendChild(cell(child.cells[column] || "", column));
        });
        body.appendChild(tr);
      });
    }
    function drawTraps(node) {
      traps.textContent = "";
      (node.traps.length ? node.traps : ["none among the replies valued here"]).forEach(function (trap) {
        var li = document.createElement("li");
        li.textContent = trap;
        traps.appendChild(li);
      });
    }
    function go(id) {
      var node = nodes[id];
      if (!node) {
        return;
      }
      state.node = id;
      state.selected = null;
      drawBoard(node);
      var path = drawLine(node);
      drawMoves(node);
      drawTraps(node);
      status.textContent = node.summary;
      exported.value = data.start + path.slice(1).map(function (n) {
        return n.label;
      }).join(" ");
    }
    function select(name) {
      var node = nodes[state.node];
      for (var square in buttons) {
        buttons[square].classList.remove("from", "to");
      }
      var targets = node.children.filter(function (id) {
        return nodes[id].uci.slice(0, 2) === name;
      });
      if (!targets.length) {
        state.selected = null;
        return false;
      }
      state.selected = name;
      buttons[name].classList.add("from");
      targets.forEach(function (id) {
        buttons[nodes[id].uci.slice(2, 4)].classList.add("to");
      });
      return true;
    }
    grid.addEventListener("click", function (event) {
      var target = event.target.closest("button.sq");
      if (!target || root.classList.contains("drilling")) {
        return;
      }
      var name = target.getAttribute("data-square");
      if (state.selected && state.selected !== name) {
        var from = state.selected;
        var node = nodes[state.node];
        var found = node.children.filter(function (id) {
          return nodes[id].uci.slice(0, 4) === from + name;
        });
        if (found.length) {
          go(found[0]);
          return;
        }
      }
      if (!select(name)) {
        status.textContent = name + ": no move of the repertoire starts there. " + nodes[state.node].summary;
      }
    });
    root.addEventListener("click", function (event) {
      var target = event.target.closest("button[data-node]");
      if (target) {
        go(Number(target.getAttribute("data-node")));
      }
    });
    root.querySelector("button.back").addEventListener("click", function () {
      var node = nodes[state.node];
      if (node.parent !== null) {
        go(node.parent);
      }
    });
    root.querySelector("button.export").addEventListener("click", function () {
      exported.hidden = false;
      exported.select();
    });
    // Explore and Drill share the board: Drill hides the explorer's table (it shows the answers).
    var drill = diffimaxDrill.setup(root, data, nodes, drawSquares);
    var explore = root.querySelector("button.mode-explore");
    var drillButton = root.querySelector("button.mode-drill");
    function mode(drilling) {
      root.classList.toggle("drilling", drilling);
      root.querySelector(".drill").hidden = !drilling;
      explore.setAttribute("aria-pressed", String(!drilling));
      drillButton.setAttribute("aria-pressed", String(drilling));
      if (drilling) {
        drill.show();
      } else {
        go(state.node);
      }
    }
    explore.addEventListener("click", function () {
      mode(false);
    });
    drillButton.addEventListener("click", function () {
      mode(true);
    });
    go(0);
  }
  var roots = document.querySelectorAll("section.explorer[data-tree]");
  for (var i = 0; i < roots.length; i++) {
    setup(roots[i]);
  }
})();
