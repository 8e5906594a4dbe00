from codegen_ci.cli import main

main()
