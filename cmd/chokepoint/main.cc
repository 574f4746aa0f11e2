#include "app/app.h"

int main(int argc, char** argv) { return cp::app::main(argc, argv); }
