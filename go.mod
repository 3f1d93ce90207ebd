module github.com/detourhq/detour

go 1.26.8
