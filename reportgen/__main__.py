from reportgen.cli import console

console()
