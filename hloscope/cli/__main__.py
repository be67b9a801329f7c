from hloscope.cli.main import entry

entry()
